#include "engine/engine_stats.h"

#include <cstdio>

#include "engine/pm/persistence.h"

namespace pmcached::engine {

std::string format_ratio(std::uint64_t numerator, std::uint64_t denominator) {
  if (denominator == 0) return "0";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f",
                static_cast<double>(numerator) / static_cast<double>(denominator));
  return buffer;
}

void append_persist_stats(std::vector<EngineStat>& out) {
  const pm::PersistTotals persist = pm::totals();
  for (pm::OpKind kind : {pm::OpKind::kInsert, pm::OpKind::kUpdate, pm::OpKind::kDelete}) {
    const pm::OpCounters& c = persist.by_kind[static_cast<std::size_t>(kind)];
    const std::string suffix(pm::op_kind_name(kind));
    out.push_back({"flushes_per_" + suffix, format_ratio(c.lines_flushed, c.operations)});
    out.push_back({"fences_per_" + suffix, format_ratio(c.fences, c.operations)});
  }
}

}  // namespace pmcached::engine

// parse_engine_spec. See engine_spec.h.
#include "bench/engine_spec.h"

#include <stdexcept>

#include "engine/engine_registry.h"

namespace pmcached::bench {

EngineSpec parse_engine_spec(const std::string& label) {
  EngineSpec spec;
  spec.label = label;
  std::size_t colon = label.find(':');
  spec.engine = label.substr(0, colon);
  const engine::EngineInfo* info = engine::find_engine(spec.engine);
  if (info == nullptr) {
    throw std::invalid_argument("unknown engine '" + spec.engine +
                                "' (valid: " + engine::engine_names() + ")");
  }
  spec.paged = static_cast<bool>(info->create_records);
  bool table_given = false;
  while (colon != std::string::npos) {
    const std::size_t next = label.find(':', colon + 1);
    const std::string part = label.substr(colon + 1, next - colon - 1);
    colon = next;
    if (!spec.paged) {
      throw std::invalid_argument("'" + label + "': " + spec.engine +
                                  " is not paged and takes no options (hash, swizzle, tN)");
    }
    if (const auto table = buffer::parse_page_table(part); table && !table_given) {
      spec.page_table = *table;
      table_given = true;
      continue;
    }
    const bool digits = part.size() > 1 && part.size() <= 5 && part[0] == 't' &&
                        part.find_first_not_of("0123456789", 1) == std::string::npos;
    if (!digits || spec.b2_threshold) {
      throw std::invalid_argument("'" + label + "': '" + part +
                                  "' is not a page table (hash, swizzle, once) or a threshold "
                                  "(tN, once)");
    }
    const unsigned threshold = static_cast<unsigned>(std::stoul(part.substr(1)));
    if (threshold < kMinB2Threshold || threshold > kMaxB2Threshold) {
      throw std::invalid_argument("'" + label + "': threshold " + std::to_string(threshold) +
                                  " is not in " + std::to_string(kMinB2Threshold) + ".." +
                                  std::to_string(kMaxB2Threshold));
    }
    spec.b2_threshold = threshold;
  }
  return spec;
}

}  // namespace pmcached::bench

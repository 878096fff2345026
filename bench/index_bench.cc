// index_bench: the index engines in-process on the pm layer, no network — seed 002 ch. 4-5.
// For each engine, distribution and emulated PM write latency: N 8-byte big-endian keys inserted
// in random order, then searched in another random order, then range queries of 0.001% and 0.01%
// of N keys from random existing keys. Reports time per operation, flushes and fences per insert
// (the engine's `stats engine`), LLC misses per operation where the machine has counters ("n/a"
// otherwise), average leaf depth and bytes per key. A measuring program, not a test:
//   index_bench [--engines a,b] [--distributions dense,sparse,clustered] [--n N]
//               [--pm-write-latency-ns 0,100,300,600] [--range-queries Q] [--repetitions R]
//               [--csv FILE]
// With R repetitions the whole grid (distribution x engine x latency) runs R times over, each
// run on a fresh pool with the same keys, so a drift of the machine spreads over every cell; one
// row per run (column `rep`), and the report takes the median and the spread.
// Items are real records in the pool ({u8 len; key}), so out-of-line keys are read from PM as in
// the server. Write latencies above 0 only change inserts (seed 002 Fig. 5.2), so for them only
// the insert phase runs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/bench_workload.h"
#include "bench/list_option.h"
#include "bench/llc_counter.h"
#include "engine/engine_registry.h"
#include "engine/pm/allocator.h"
#include "engine/pm/persistence.h"
#include "engine/pm/pool.h"

namespace pmcached::bench {
namespace {

using engine::ItemRef;

struct Row {
  std::string engine, distribution;
  unsigned rep = 1;
  std::size_t n = 0;
  std::uint32_t latency_ns = 0;
  double insert_ns = 0, search_ns = 0, range_small_ns = 0, range_large_ns = 0;
  std::string llc_insert = "n/a", llc_search = "n/a";
  std::map<std::string, std::string> stats;
};

double per_op_ns(std::chrono::steady_clock::duration d, std::size_t ops) {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()) /
         static_cast<double>(ops == 0 ? 1 : ops);
}

std::string per_op(std::optional<std::uint64_t> count, std::size_t ops) {
  if (!count) return "n/a";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", static_cast<double>(*count) / ops);
  return buffer;
}

Row run(const engine::EngineInfo& info, Distribution dist, const std::vector<std::string>& keys,
        std::uint32_t latency_ns, std::size_t range_queries, std::uint64_t seed) {
  const std::size_t n = keys.size();
  Row row;
  row.engine = info.name;
  row.distribution = distribution_name(dist);
  row.n = n;
  row.latency_ns = latency_ns;
  pm::configure({pm::FlushInstruction::kAuto, 0});
  // Committed before anything is timed, as a mapped pool on PM is: an in-memory region's pages
  // would otherwise be faulted in by the timed inserts.
  auto memory = pm::PmRegion::in_memory(n * 320 + (64u << 20));
  std::memset(memory->base(), 0, memory->size());
  auto pool = pm::Pool::open_region(std::move(memory), info.name);
  pm::Allocator allocator(*pool);
  pm::PmRegion* region = &pool->region();
  std::vector<ItemRef> refs(n);
  for (std::size_t i = 0; i < n; ++i) {  // the items, as the store would have written them
    refs[i] = allocator.allocate(1 + keys[i].size());
    auto* p = region->at<unsigned char>(refs[i]);
    p[0] = static_cast<unsigned char>(keys[i].size());
    std::memcpy(p + 1, keys[i].data(), keys[i].size());
  }
  engine::EngineContext context;
  context.key_of = [region](ItemRef ref) {
    const auto* p = region->at<unsigned char>(ref);
    return std::string_view(reinterpret_cast<const char*>(p + 1), p[0]);
  };
  context.pool = pool.get();
  context.allocator = &allocator;
  context.hash_index = false;  // dram: the ordered index alone, seed 002's B+-tree baseline
  auto index = info.create(context);

  LlcCounter llc;
  pm::configure({pm::FlushInstruction::kAuto, latency_ns});
  pm::reset_counters();
  llc.start();
  auto started = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < n; ++i) {
    if (index->upsert(keys[i], refs[i]).status != engine::UpsertStatus::kInserted) {
      std::fprintf(stderr, "%s: insert %zu failed\n", info.name.c_str(), i);
      std::exit(1);
    }
  }
  row.insert_ns = per_op_ns(std::chrono::steady_clock::now() - started, n);
  row.llc_insert = per_op(llc.stop(), n);
  pm::configure({pm::FlushInstruction::kAuto, 0});
  for (const engine::EngineStat& s : index->stats()) row.stats[s.name] = s.value;
  if (latency_ns != 0) return row;

  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(seed + 1);
  std::shuffle(order.begin(), order.end(), rng);
  std::size_t wrong = 0;
  llc.start();
  started = std::chrono::steady_clock::now();
  for (std::size_t i : order) wrong += index->lookup(keys[i]) != refs[i];
  row.search_ns = per_op_ns(std::chrono::steady_clock::now() - started, n);
  row.llc_search = per_op(llc.stop(), n);
  if (wrong != 0) {
    std::fprintf(stderr, "%s: %zu lookups returned the wrong item\n", info.name.c_str(), wrong);
    std::exit(1);
  }

  // Range queries of 0.001% and 0.01% of N keys (at least 1), from random existing keys.
  for (double fraction : {0.00001, 0.0001}) {
    const std::size_t length = std::max<std::size_t>(1, static_cast<std::size_t>(n * fraction));
    std::size_t visited = 0;
    started = std::chrono::steady_clock::now();
    for (std::size_t q = 0; q < range_queries; ++q) {
      std::size_t seen = 0;
      index->scan(keys[rng() % n], [&](std::string_view, ItemRef) { return ++seen < length; });
      visited += seen;
    }
    const double ns = per_op_ns(std::chrono::steady_clock::now() - started, range_queries);
    (fraction < 0.00005 ? row.range_small_ns : row.range_large_ns) = ns;
    if (visited == 0) std::exit(1);
  }
  return row;
}

}  // namespace
}  // namespace pmcached::bench

int main(int argc, char** argv) {
  using namespace pmcached;
  CLI::App app{"index_bench: the index engines in-process, seed 002 ch. 4-5 workloads"};
  std::string engines, distributions = "dense,sparse,clustered", latencies = "0", csv;
  std::size_t n = 1000000, range_queries = 1000;
  unsigned repetitions = 1;
  std::uint64_t seed = 2017;
  app.add_option("--engines", engines, "comma-separated engines (default: all registered)");
  app.add_option("--distributions", distributions, "dense, sparse, clustered");
  app.add_option("--n", n, "keys per distribution")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 32));
  app.add_option("--pm-write-latency-ns", latencies, "comma-separated emulated write latencies");
  app.add_option("--range-queries", range_queries, "range queries per size")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24));
  app.add_option("--repetitions", repetitions, "runs of the whole grid")
      ->check(CLI::Range(1u, 100u));
  app.add_option("--seed", seed, "key generation seed");
  app.add_option("--csv", csv, "append one row per run to this CSV file");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  std::vector<const engine::EngineInfo*> infos;
  if (engines.empty()) {
    for (const engine::EngineInfo& info : engine::registered_engines()) {
      if (info.create) infos.push_back(&info);  // index engines only
    }
  } else {
    for (const std::string& name : bench::split_list(engines)) {
      const engine::EngineInfo* info = engine::find_engine(name);
      if (info == nullptr) {
        std::fprintf(stderr, "unknown engine '%s' (valid: %s)\n", name.c_str(),
                     engine::engine_names().c_str());
        return 2;
      }
      infos.push_back(info);
    }
  }
  std::vector<bench::Distribution> dists;
  for (const std::string& name : bench::split_list(distributions)) {
    bench::Distribution d;
    if (!bench::parse_distribution(name, d)) {
      std::fprintf(stderr, "unknown distribution '%s' (valid: dense, sparse, clustered)\n",
                   name.c_str());
      return 2;
    }
    dists.push_back(d);
  }
  std::vector<std::uint32_t> latency_list;
  for (const std::string& l : bench::split_list(latencies)) {
    latency_list.push_back(static_cast<std::uint32_t>(std::stoul(l)));
  }

  std::FILE* out = nullptr;
  if (!csv.empty()) {
    std::FILE* existing = std::fopen(csv.c_str(), "r");
    const bool fresh = existing == nullptr;
    if (existing != nullptr) std::fclose(existing);
    out = std::fopen(csv.c_str(), "a");
    if (out == nullptr) {
      std::fprintf(stderr, "cannot write %s\n", csv.c_str());
      return 2;
    }
    if (fresh) {
      std::fprintf(out,
                   "engine,distribution,rep,n,pm_write_latency_ns,insert_ns,search_ns,"
                   "range_0.001pct_ns,range_0.01pct_ns,flushes_per_insert,fences_per_insert,"
                   "llc_per_insert,llc_per_search,leaf_depth_avg,bytes_per_key\n");
    }
  }
  std::printf("%-8s %-10s %3s %9s %6s %10s %10s %11s %11s %9s %9s %8s %8s %6s %8s\n", "engine",
              "dist", "rep", "n", "wlat", "insert_ns", "search_ns", "range.001%", "range.01%",
              "flush/ins", "fence/ins", "llc/ins", "llc/srch", "depth", "B/key");
  for (unsigned rep = 1; rep <= repetitions; ++rep) {
    for (bench::Distribution d : dists) {
      std::vector<std::string> keys;
      for (std::uint64_t v : bench::make_keys(d, n, seed)) keys.push_back(bench::be64(v));
      for (const engine::EngineInfo* info : infos) {
        for (std::uint32_t latency : latency_list) {
          bench::Row r = bench::run(*info, d, keys, latency, range_queries, seed);
          r.rep = rep;
          auto stat = [&](const char* name) {
            return r.stats.count(name) != 0 ? r.stats[name] : std::string("n/a");
          };
          // Phases a run skipped (search and ranges above 0 ns write latency) print as "-" / empty.
          const bool searched = r.latency_ns == 0;
          auto time_of = [&](double ns, const char* skipped) {
            char buffer[32];
            std::snprintf(buffer, sizeof buffer, "%.1f", ns);
            return searched ? std::string(buffer) : std::string(skipped);
          };
          std::printf("%-8s %-10s %3u %9zu %6u %10.1f %10s %11s %11s %9s %9s %8s %8s %6s %8s\n",
                      r.engine.c_str(), r.distribution.c_str(), r.rep, r.n, r.latency_ns,
                      r.insert_ns, time_of(r.search_ns, "-").c_str(),
                      time_of(r.range_small_ns, "-").c_str(),
                      time_of(r.range_large_ns, "-").c_str(), stat("flushes_per_insert").c_str(),
                      stat("fences_per_insert").c_str(), r.llc_insert.c_str(), r.llc_search.c_str(),
                      stat("leaf_depth_avg").c_str(), stat("bytes_per_key").c_str());
          std::fflush(stdout);
          if (out != nullptr) {
            std::fprintf(out, "%s,%s,%u,%zu,%u,%.1f,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", r.engine.c_str(),
                         r.distribution.c_str(), r.rep, r.n, r.latency_ns, r.insert_ns,
                         time_of(r.search_ns, "").c_str(), time_of(r.range_small_ns, "").c_str(),
                         time_of(r.range_large_ns, "").c_str(), stat("flushes_per_insert").c_str(),
                         stat("fences_per_insert").c_str(), r.llc_insert.c_str(),
                         searched ? r.llc_search.c_str() : "", stat("leaf_depth_avg").c_str(),
                         stat("bytes_per_key").c_str());
            std::fflush(out);
          }
        }
      }
    }
  }
  if (out != nullptr) std::fclose(out);
  return 0;
}

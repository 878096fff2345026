// flush_report: prints a persistent engine's cache-line flushes and fences per insert and its
// average leaf depth, from the engine's own `stats()` (flushes_per_insert, fences_per_insert,
// leaf_depth_avg), for N random-order 8-byte big-endian keys in the three distributions of
// seed 002 §4 (Dense 1..N, Sparse uniform, Clustered runs of 64 at random bases), to set beside
// seed 002 Tables 5.1 / 5.2. A measuring program, not a test:
//   flush_report ENGINE [N=1000000]      (ENGINE: any persistent engine)
//
// Items are kept out of the pool (references are just even numbers, keys in a vector), so the
// counts are the index's own flushes; the paper's leaf node write corresponds to one extra line
// per insert (the item record, written by the store), shown as "+item".
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/engine_registry.h"
#include "engine/pm/allocator.h"
#include "engine/pm/persistence.h"
#include "engine/pm/pool.h"

namespace {

using pmcached::engine::EngineContext;
using pmcached::engine::ItemRef;

std::string be64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 7; i >= 0; --i, v >>= 8) s[static_cast<std::size_t>(i)] = static_cast<char>(v);
  return s;
}

std::vector<std::uint64_t> make_keys(const std::string& distribution, std::size_t n) {
  std::mt19937_64 rng(2017);
  std::vector<std::uint64_t> keys;
  keys.reserve(n);
  if (distribution == "Dense") {
    for (std::size_t i = 1; i <= n; ++i) keys.push_back(i);
  } else if (distribution == "Sparse") {
    while (keys.size() < n) keys.push_back(rng());
  } else {  // Clustered: runs of 64 sequential keys at random places
    while (keys.size() < n) {
      const std::uint64_t base = rng() & ~63ull;
      for (std::uint64_t j = 0; j < 64 && keys.size() < n; ++j) keys.push_back(base + j);
    }
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::shuffle(keys.begin(), keys.end(), rng);
  return keys;
}

}  // namespace

int main(int argc, char** argv) {
  namespace pm = pmcached::pm;
  const pmcached::engine::EngineInfo* info =
      argc > 1 ? pmcached::engine::find_engine(argv[1]) : nullptr;
  if (info == nullptr || !info->persistent) {
    std::string names;
    for (const auto& e : pmcached::engine::registered_engines()) {
      if (e.persistent) names += (names.empty() ? "" : ", ") + e.name;
    }
    std::fprintf(stderr, "usage: flush_report ENGINE [N=1000000]  (ENGINE: %s)\n",
                 names.c_str());
    return 2;
  }
  const std::size_t n = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1000000;
  std::printf("flush_report %s: %zu random-order 8-byte keys per distribution, flush=%s\n",
              info->name.c_str(), n,
              std::string(pm::flush_instruction_name(pm::active_flush_instruction())).c_str());
  std::printf("%-10s %9s %11s %10s %11s %11s\n", "dist", "keys", "flush/ins", "+item",
              "fence/ins", "leaf_depth");
  for (const std::string dist : {"Dense", "Sparse", "Clustered"}) {
    const std::vector<std::uint64_t> numbers = make_keys(dist, n);
    std::vector<std::string> keys;
    keys.reserve(numbers.size());
    for (std::uint64_t v : numbers) keys.push_back(be64(v));

    auto pool = pm::Pool::open_region(pm::PmRegion::in_memory(std::size_t{1} << 30), info->name);
    pm::Allocator allocator(pool->region(), pool->heap_begin(), pool->heap_end());
    EngineContext context;
    context.key_of = [&keys](ItemRef ref) { return std::string_view(keys[ref / 2 - 1]); };
    context.pool = pool.get();
    context.allocator = &allocator;
    auto engine = info->create(context);

    pm::reset_counters();  // the stats are the pm layer's process-wide counters
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (engine->upsert(keys[i], 2 * (i + 1)).status !=
          pmcached::engine::UpsertStatus::kInserted) {
        std::fprintf(stderr, "insert %zu failed\n", i);
        return 1;
      }
    }
    std::map<std::string, std::string> stats;
    for (const auto& s : engine->stats()) stats[s.name] = s.value;
    for (const char* name : {"flushes_per_insert", "fences_per_insert", "leaf_depth_avg"}) {
      if (stats.count(name) == 0) {
        std::fprintf(stderr, "engine %s has no stat %s\n", info->name.c_str(), name);
        return 1;
      }
    }
    const double flushes = std::strtod(stats["flushes_per_insert"].c_str(), nullptr);
    std::printf("%-10s %9zu %11.2f %10.2f %11s %11s\n", dist.c_str(), keys.size(), flushes,
                flushes + 1.0, stats["fences_per_insert"].c_str(),
                stats["leaf_depth_avg"].c_str());
  }
  std::printf(
      "seed 002 Table 5.1 (CLFLUSH per insert, leaf node included; Dense/Sparse/Clustered):\n"
      "  WORT 2.2/2.4/2.3  WOART 2.4/3.5/3.7  ART+CoW 2.4/3.8/3.9\n"
      "  FPTree 4.8  NV-Tree 3.3  wB+Tree 6.0 (all three distributions; keys in the node)\n"
      "seed 002 Table 5.2 (leaf node depth, 128M keys): WORT 7.0/7.0/8.2, WOART and ART+CoW "
      "4.0/4.0/4.2, FPTree 3.0, NV-Tree 3.0, wB+Tree 4.0\n");
  return 0;
}

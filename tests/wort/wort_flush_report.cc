// wort_flush_report: prints the wort engine's cache-line flushes and fences per insert and its
// average leaf depth for N random-order 8-byte keys in the three distributions of seed 002 §4
// (Dense 1..N, Sparse uniform, Clustered runs of 64), to set beside seed 002 Tables 5.1 / 5.2.
// A measuring program, not a test: `wort_flush_report [N=1000000]`.
//
// Items are kept out of the pool (references are just even numbers, keys in a vector), so the
// counts are the index's own flushes; the paper's leaf node write corresponds to one extra line
// per insert (the item record, written by the store and counted as "item").
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
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  std::printf("wort_flush_report: %zu random-order 8-byte keys per distribution, flush=%s\n", n,
              std::string(pm::flush_instruction_name(pm::active_flush_instruction())).c_str());
  std::printf("%-10s %9s %11s %10s %11s %9s %11s\n", "dist", "keys", "flush/ins", "+item",
              "fence/ins", "nodes", "leaf_depth");
  for (const std::string dist : {"Dense", "Sparse", "Clustered"}) {
    const std::vector<std::uint64_t> numbers = make_keys(dist, n);
    std::vector<std::string> keys;
    keys.reserve(numbers.size());
    for (std::uint64_t v : numbers) keys.push_back(be64(v));

    auto pool = pm::Pool::open_region(pm::PmRegion::in_memory(std::size_t{1} << 30), "wort");
    pm::Allocator allocator(pool->region(), pool->heap_begin(), pool->heap_end());
    EngineContext context;
    context.key_of = [&keys](ItemRef ref) { return std::string_view(keys[ref / 2 - 1]); };
    context.pool = pool.get();
    context.allocator = &allocator;
    auto engine = pmcached::engine::find_engine("wort")->create(context);

    pm::reset_counters();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (engine->upsert(keys[i], 2 * (i + 1)).status !=
          pmcached::engine::UpsertStatus::kInserted) {
        std::fprintf(stderr, "insert %zu failed\n", i);
        return 1;
      }
    }
    const pm::OpCounters c = pm::totals().by_kind[static_cast<std::size_t>(pm::OpKind::kInsert)];
    std::map<std::string, std::string> stats;
    for (const auto& s : engine->stats()) stats[s.name] = s.value;
    const double flushes = static_cast<double>(c.lines_flushed) / static_cast<double>(c.operations);
    std::printf("%-10s %9zu %11.2f %10.2f %11.2f %9s %11s\n", dist.c_str(), keys.size(), flushes,
                flushes + 1.0, static_cast<double>(c.fences) / static_cast<double>(c.operations),
                stats["nodes"].c_str(), stats["leaf_depth_avg"].c_str());
  }
  std::printf(
      "seed 002 Table 5.1 (WORT, CLFLUSH per insert, leaf node included): "
      "Dense 2.2, Sparse 2.4, Clustered 2.3\n"
      "seed 002 Table 5.2 (WORT, leaf node depth, 128M keys): Dense 7.0, Sparse 7.0, "
      "Clustered 8.2\n");
  return 0;
}

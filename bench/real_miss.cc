#include "bench/real_miss.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "bench/csv_file.h"
#include "bench/policy_simulation.h"
#include "bench/scratch_dir.h"
#include "engine/buffer/buffer_manager.h"
#include "engine/buffer/page_file.h"

namespace pmcached::bench {
namespace {

using buffer::BufferManager;
using buffer::BufferOptions;
using buffer::BufferStats;
using buffer::LatchMode;
using buffer::PageGuard;
using buffer::PageId;
using Clock = std::chrono::steady_clock;

// Pages 1 .. pages, each a leaf holding its own id in its last 8 bytes.
void write_pages(buffer::PageFile& file, std::uint32_t pages) {
  BufferOptions options;
  options.frames = 1024;
  BufferManager bm(file, options);
  const std::size_t page_size = file.page_size();
  for (PageId id = 1; id <= pages; ++id) {
    PageGuard g = bm.fix_new(id);
    g.header().kind = 2;
    std::memcpy(g.data() + page_size - 8, &id, sizeof(id));
    g.mark_dirty(1);
  }
  bm.write_back_all();
}

struct RealRun {
  std::uint64_t misses = 0, evictions = 0, examined = 0;
  double ns_per_reference = 0;
  bool right_pages = true;
};

RealRun run_real(buffer::PageFile& file, buffer::EvictionKind kind, std::size_t frames,
                 const std::vector<std::uint32_t>& stream, std::size_t warmup, std::uint64_t seed) {
  BufferOptions options;
  options.frames = frames;
  options.page_table = buffer::PageTableKind::kHash;
  options.eviction = kind;
  options.seed = seed;
  BufferManager bm(file, options);
  const std::size_t page_size = bm.page_size();
  RealRun run;
  BufferStats before;
  Clock::time_point started;
  for (std::size_t i = 0; i < stream.size(); ++i) {
    if (i == warmup) {
      before = bm.stats();
      started = Clock::now();
    }
    const PageGuard g = bm.fix(stream[i], LatchMode::kShared);
    std::uint64_t own;
    std::memcpy(&own, g.data() + page_size - 8, sizeof(own));
    run.right_pages = run.right_pages && own == stream[i];
  }
  const auto elapsed = Clock::now() - started;
  const BufferStats after = bm.stats();
  run.misses = after.misses - before.misses;
  run.evictions = after.evictions - before.evictions;
  run.examined = after.frames_examined - before.frames_examined;
  run.ns_per_reference = std::chrono::duration<double, std::nano>(elapsed).count() /
                         static_cast<double>(stream.size() - warmup);
  return run;
}

double percent(std::uint64_t n, std::size_t of) {
  return 100.0 * static_cast<double>(n) / static_cast<double>(of);
}

}  // namespace

int run_real_miss(const RealMissOptions& o) {
  ScratchDir scratch(o.dir);
  buffer::PageFileOptions file_options;
  file_options.path = scratch.path() + "/real_miss.pages";
  file_options.page_size = o.page_size;
  file_options.max_bytes = (std::uint64_t{o.pages} + 1) * o.page_size + (8u << 20);
  auto file = buffer::PageFile::open(file_options);
  write_pages(*file, o.pages);

  std::printf(
      "# miss rates through the real buffer manager (hash page table, fix/unfix by id, one "
      "thread) beside the simulation\n"
      "# %u pages of %zu bytes in %s (%s); per run %zu warm-up + %zu counted references "
      "from an empty pool;\n#   the simulation's streams of its first repetition "
      "(uniform, zipf theta %.2f), the same RANDOM seed\n\n",
      o.pages, o.page_size, scratch.path().c_str(),
      file->direct_io() ? "O_DIRECT" : "buffered, no O_DIRECT", o.warmup, o.references, o.theta);
  std::fflush(stdout);

  std::FILE* csv = nullptr;
  if (!o.csv.empty()) {
    csv = open_csv(o.csv,
                   "workload,theta,pages,pool_pct,frames,policy,references,real_misses,"
                   "real_miss_rate,sim_misses,sim_miss_rate,real_evictions,sim_evictions,"
                   "real_examined_per_eviction,sim_examined_per_eviction,real_ns_per_reference,"
                   "direct_io\n");
    if (csv == nullptr) return 2;
  }
  int status = 0;
  std::printf("%8s %6s %8s %8s %14s %14s %12s %12s %14s\n", "workload", "pool%", "frames", "policy",
              "real miss %", "sim. miss %", "real-sim", "examined", "ns/reference");
  for (PageSkew skew : o.workloads) {
    const std::uint64_t seed = stream_seed(o.seed, 1, skew);
    const auto stream = make_page_stream(skew, o.pages, o.warmup + o.references, o.theta, seed);
    for (double pool : o.pools) {
      const auto frames =
          std::max<std::size_t>(1, static_cast<std::size_t>(o.pages * pool / 100.0 + 0.5));
      for (buffer::EvictionKind kind : o.policies) {
        const RealRun real = run_real(*file, kind, frames, stream, o.warmup, seed);
        const SimulatedRun sim = simulate_policy(kind, frames, o.pages, stream, o.warmup, seed);
        if (!real.right_pages) {
          std::fprintf(stderr, "real miss: a fix returned another page than it was asked for\n");
          status = 1;
        }
        const std::string name(buffer::eviction_name(kind));
        const double real_examined =
            real.evictions ? static_cast<double>(real.examined) / real.evictions : 0.0;
        const double sim_examined =
            sim.evictions ? static_cast<double>(sim.examined) / sim.evictions : 0.0;
        std::printf("%8s %6g %8zu %8s %14.3f %14.3f %12lld %5.2f/%-6.2f %14.0f\n",
                    std::string(page_skew_name(skew)).c_str(), pool, frames, name.c_str(),
                    percent(real.misses, o.references), percent(sim.misses, o.references),
                    static_cast<long long>(real.misses) - static_cast<long long>(sim.misses),
                    real_examined, sim_examined, real.ns_per_reference);
        std::fflush(stdout);
        if (csv != nullptr) {
          std::fprintf(csv,
                       "%s,%.2f,%u,%g,%zu,%s,%zu,%llu,%.6f,%llu,%.6f,%llu,%llu,%.3f,%.3f,"
                       "%.1f,%d\n",
                       std::string(page_skew_name(skew)).c_str(), o.theta, o.pages, pool, frames,
                       name.c_str(), o.references, static_cast<unsigned long long>(real.misses),
                       percent(real.misses, o.references) / 100,
                       static_cast<unsigned long long>(sim.misses),
                       percent(sim.misses, o.references) / 100,
                       static_cast<unsigned long long>(real.evictions),
                       static_cast<unsigned long long>(sim.evictions), real_examined, sim_examined,
                       real.ns_per_reference, file->direct_io() ? 1 : 0);
        }
      }
    }
  }
  if (csv != nullptr) std::fclose(csv);
  std::printf("\n");
  return status;
}

}  // namespace pmcached::bench

// buffer_bench: the buffer layer measured in-process (issue 18). A measuring program, not a test.
//
//   buffer_bench [--miss-rates] [--fix-cost] [--real-miss] [options]   (none: the first two)
//
// --miss-rates: the miss rate of each replacement policy for pools of 1..100% of the data pages
// under a uniform and a Zipf (theta 0.99) page-reference stream, the policy driven exactly as
// the buffer manager drives it (policy_simulation.h), and the eviction cost: ns per
// pick_victim() and frames the policy looked at per eviction.
//   [--pages N] [--warmup W] [--references R] [--pools 1,2,5,...] [--policies random,clock,...]
//   [--workloads uniform,zipf] [--theta T] [--repetitions K] [--seed S] [--csv FILE]
// Each repetition draws new streams (and a new RANDOM seed); every policy and pool size of a
// repetition sees the same streams. The pool starts empty; the first W references warm it and
// are not counted, so what remains at 100% are compulsory misses (pages first referenced late).
//
// --fix-cost: ns per fix on a warm, fully resident pool, hash table vs pointer swizzling, through
// the real BufferManager (fix_cost.h).
//   [--fanout F] [--levels L] [--page-size B] [--traversals N] [--threads 1,2]
//   [--fix-policy P] [--fix-repetitions K] [--fix-cost-csv FILE]
//
// --real-miss: the streams of the first repetition through a real BufferManager of each policy,
// its miss rate beside the simulated one (real_miss.h).
//   [--real-pools 10,...] [--real-miss-csv FILE]
//
// Page files go to a scratch directory under --dir (default /dev/shm, else /tmp), removed after.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/csv_file.h"
#include "bench/fix_cost.h"
#include "bench/list_option.h"
#include "bench/machine_info.h"
#include "bench/page_stream.h"
#include "bench/policy_simulation.h"
#include "bench/real_miss.h"
#include "bench/spread.h"
#include "engine/buffer/replacement_policy.h"

namespace pmcached::bench {
namespace {

using buffer::EvictionKind;

struct Options {
  std::uint32_t pages = 100000;
  std::size_t warmup = 1000000, references = 2000000;
  std::vector<double> pools;
  std::vector<EvictionKind> policies;
  std::vector<PageSkew> workloads;
  double theta = 0.99;
  unsigned repetitions = 3;
  std::uint64_t seed = 18;
  std::string csv;
};

int miss_rates(const Options& o) {
  std::printf("# miss rates: replacement policies driven as the buffer manager drives them\n");
  std::printf(
      "# workload: %u data pages; per run %zu warm-up + %zu counted references from an empty "
      "pool;\n#   streams: uniform, and zipf theta %.2f (ranks scattered over the pages); "
      "every frame evictable\n",
      o.pages, o.warmup, o.references, o.theta);
  std::printf(
      "# repetitions: %u (new streams and RANDOM seed each); cells: median [min-max]\n"
      "# eviction cost: steady_clock around each pick_victim(), less an empty steady_clock "
      "interval taken just before it\n\n",
      o.repetitions);
  std::fflush(stdout);

  std::FILE* csv = nullptr;
  if (!o.csv.empty()) {
    csv = open_csv(o.csv,
                   "workload,theta,pages,pool_pct,frames,policy,rep,references,misses,miss_rate,"
                   "evictions,pick_ns,examined_per_eviction\n");
    if (csv == nullptr) return 2;
  }
  // (workload, pool index, policy) -> one value per repetition
  std::map<std::tuple<int, std::size_t, int>, std::vector<SimulatedRun>> runs;
  for (unsigned rep = 1; rep <= o.repetitions; ++rep) {
    for (PageSkew skew : o.workloads) {
      const std::uint64_t seed = stream_seed(o.seed, rep, skew);
      const auto stream = make_page_stream(skew, o.pages, o.warmup + o.references, o.theta, seed);
      for (std::size_t p = 0; p < o.pools.size(); ++p) {
        const auto frames =
            std::max<std::size_t>(1, static_cast<std::size_t>(o.pages * o.pools[p] / 100.0 + 0.5));
        for (EvictionKind kind : o.policies) {
          const SimulatedRun r = simulate_policy(kind, frames, o.pages, stream, o.warmup, seed);
          runs[{static_cast<int>(skew), p, static_cast<int>(kind)}].push_back(r);
          if (csv != nullptr) {
            std::fprintf(csv, "%s,%.2f,%u,%g,%zu,%s,%u,%llu,%llu,%.6f,%llu,%.1f,%.3f\n",
                         std::string(page_skew_name(skew)).c_str(), o.theta, o.pages, o.pools[p],
                         frames, std::string(buffer::eviction_name(kind)).c_str(), rep,
                         static_cast<unsigned long long>(r.references),
                         static_cast<unsigned long long>(r.misses),
                         static_cast<double>(r.misses) / r.references,
                         static_cast<unsigned long long>(r.evictions), r.pick_ns,
                         r.evictions ? static_cast<double>(r.examined) / r.evictions : 0.0);
          }
        }
      }
    }
  }
  if (csv != nullptr) std::fclose(csv);

  auto table = [&](PageSkew skew, const char* title, bool per_eviction, auto value,
                   const char* fmt) {
    std::printf("%s, %s stream\n%6s %8s", title, std::string(page_skew_name(skew)).c_str(), "pool%",
                "frames");
    for (EvictionKind kind : o.policies) {
      std::printf(" %22s", std::string(buffer::eviction_name(kind)).c_str());
    }
    std::printf("\n");
    for (std::size_t p = 0; p < o.pools.size(); ++p) {
      const auto frames =
          std::max<std::size_t>(1, static_cast<std::size_t>(o.pages * o.pools[p] / 100.0 + 0.5));
      std::printf("%6g %8zu", o.pools[p], frames);
      for (EvictionKind kind : o.policies) {
        std::vector<double> values;
        for (const SimulatedRun& r : runs[{static_cast<int>(skew), p, static_cast<int>(kind)}]) {
          if (r.evictions != 0 || !per_eviction) values.push_back(value(r));
        }
        std::printf(" %22s", values.empty() ? "-" : format_spread(spread(values), fmt).c_str());
      }
      std::printf("\n");
    }
    std::printf("\n");
  };
  for (PageSkew skew : o.workloads) {
    table(
        skew, "miss rate (%)", false,
        [](const SimulatedRun& r) { return 100.0 * static_cast<double>(r.misses) / r.references; },
        "%.2f");
  }
  std::printf("eviction cost ('-': no evictions)\n\n");
  for (PageSkew skew : o.workloads) {
    table(
        skew, "ns per pick_victim()", true, [](const SimulatedRun& r) { return r.pick_ns; },
        "%.0f");
    table(
        skew, "frames examined per eviction", true,
        [](const SimulatedRun& r) {
          return r.evictions ? static_cast<double>(r.examined) / r.evictions : 0.0;
        },
        "%.2f");
  }
  return 0;
}

}  // namespace
}  // namespace pmcached::bench

int main(int argc, char** argv) {
  using namespace pmcached;
  CLI::App app{
      "buffer_bench: replacement policies (miss rate, eviction cost), fix cost hash vs "
      "swizzle, miss rates through the real buffer manager"};
  bench::Options o;
  bench::FixCostOptions fix;
  bench::RealMissOptions real;
  bool want_miss_rates = false, want_fix_cost = false, want_real_miss = false;
  std::string pools = "1,2,5,10,20,50,100", policies = "random,clock,gclock,car,lru",
              workloads = "uniform,zipf", threads = "1,2", fix_policy = "clock", real_pools = "10",
              dir;
  app.add_flag("--miss-rates", want_miss_rates, "simulated miss rates and eviction cost");
  app.add_flag("--fix-cost", want_fix_cost, "fix cost on a resident pool, hash vs swizzle");
  app.add_flag("--real-miss", want_real_miss, "miss rates through the real buffer manager");
  app.add_option("--pages", o.pages, "data pages")->check(CLI::Range(1u, 1u << 30));
  app.add_option("--warmup", o.warmup, "references per run before counting");
  app.add_option("--references", o.references, "counted references per run")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 32));
  app.add_option("--pools", pools, "pool sizes in % of the data pages");
  app.add_option("--policies", policies, "random, clock, gclock, car, lru");
  app.add_option("--workloads", workloads, "uniform, zipf");
  app.add_option("--theta", o.theta, "Zipf skew")->check(CLI::Range(0.01, 0.999));
  app.add_option("--repetitions", o.repetitions, "runs of the whole miss-rate grid")
      ->check(CLI::Range(1u, 100u));
  app.add_option("--seed", o.seed, "stream seed");
  app.add_option("--csv", o.csv, "miss rates: one row per run to this CSV file");
  app.add_option("--fanout", fix.fanout, "fix cost: children per inner page")
      ->check(CLI::Range(2u, 1024u));
  app.add_option("--levels", fix.levels, "fix cost: tree levels, root and leaves included")
      ->check(CLI::Range(2u, 6u));
  app.add_option("--page-size", fix.page_size, "fix cost: page size in bytes")
      ->check(CLI::Range(buffer::kMinPageSize, buffer::kMaxPageSize));
  app.add_option("--traversals", fix.traversals, "fix cost: traversals per thread and run")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30));
  app.add_option("--threads", threads, "fix cost: thread counts");
  app.add_option("--fix-policy", fix_policy, "fix cost: the pool's replacement policy");
  app.add_option("--fix-repetitions", fix.repetitions, "fix cost: repetitions")
      ->check(CLI::Range(1u, 100u));
  app.add_option("--fix-cost-csv", fix.csv, "fix cost: one row per run to this CSV file");
  app.add_option("--real-pools", real_pools, "real miss: pool sizes in % of the data pages");
  app.add_option("--real-miss-csv", real.csv, "real miss: one row per run to this CSV file");
  app.add_option("--dir", dir, "where page files go (a scratch directory under it)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (!want_miss_rates && !want_fix_cost && !want_real_miss) {
    want_miss_rates = want_fix_cost = true;
  }
  auto percentages = [](const std::string& list, std::vector<double>& out) {
    for (const std::string& p : bench::split_list(list)) {
      const double pct = std::stod(p);
      if (pct <= 0 || pct > 100) {
        std::fprintf(stderr, "pool size %s%% is not in (0, 100]\n", p.c_str());
        return false;
      }
      out.push_back(pct);
    }
    return true;
  };
  real.pools.clear();
  if (!percentages(pools, o.pools) || !percentages(real_pools, real.pools)) return 2;
  for (const std::string& name : bench::split_list(policies)) {
    const auto kind = buffer::parse_eviction(name);
    if (!kind) {
      std::fprintf(stderr, "unknown policy '%s' (valid: random, clock, gclock, car, lru)\n",
                   name.c_str());
      return 2;
    }
    o.policies.push_back(*kind);
  }
  const auto fix_kind = buffer::parse_eviction(fix_policy);
  if (!fix_kind) {
    std::fprintf(stderr, "unknown policy '%s' (valid: random, clock, gclock, car, lru)\n",
                 fix_policy.c_str());
    return 2;
  }
  fix.eviction = *fix_kind;
  for (const std::string& name : bench::split_list(workloads)) {
    if (name == "uniform") {
      o.workloads.push_back(bench::PageSkew::kUniform);
    } else if (name == "zipf") {
      o.workloads.push_back(bench::PageSkew::kZipf);
    } else {
      std::fprintf(stderr, "unknown workload '%s' (valid: uniform, zipf)\n", name.c_str());
      return 2;
    }
  }
  fix.threads.clear();
  for (const std::string& t : bench::split_list(threads)) {
    const int n = std::stoi(t);
    if (n < 1 || n > 64) {
      std::fprintf(stderr, "thread count %s is not in 1..64\n", t.c_str());
      return 2;
    }
    fix.threads.push_back(static_cast<unsigned>(n));
  }
  if (std::size_t{fix.fanout} * 8 + 24 + 8 > fix.page_size) {
    std::fprintf(stderr, "a fanout of %u does not fit in a page of %zu bytes\n", fix.fanout,
                 fix.page_size);
    return 2;
  }
  fix.seed = o.seed;
  fix.dir = real.dir = dir;
  real.pages = o.pages;
  real.warmup = o.warmup;
  real.references = o.references;
  real.policies = o.policies;
  real.workloads = o.workloads;
  real.theta = o.theta;
  real.seed = o.seed;

  std::printf("# buffer_bench (issue 18)\n# machine: %u CPUs, %s; build: %s\n", bench::cpu_count(),
              bench::cpu_model().c_str(), bench::build_type().c_str());
  std::printf("# load average (1/5/15 min) at the start: %s\n\n", bench::load_average().c_str());
  std::fflush(stdout);
  int status = 0;
  try {
    // The fix cost first: its timings suffer most from other work, and the load tends to grow.
    if (want_fix_cost) status = std::max(status, bench::run_fix_cost(fix));
    if (want_miss_rates) status = std::max(status, bench::miss_rates(o));
    if (want_real_miss) status = std::max(status, bench::run_real_miss(real));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "buffer_bench: %s\n", e.what());
    return 1;
  }
  std::printf("# load average (1/5/15 min) at the end: %s\n", bench::load_average().c_str());
  return status;
}

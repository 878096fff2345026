// buffer_bench: the buffer layer's policies measured in-process (issue 18). A measuring program,
// not a test.
//
// Default mode: the miss rate of each replacement policy for pools of 1..100% of the data pages
// under a uniform and a Zipf (theta 0.99) page-reference stream, the policy driven exactly as
// the buffer manager drives it (a hit: on_hit; a miss: a free frame while there is one, else
// pick_victim + on_evict + on_load; every frame evictable), and the eviction cost: ns per
// pick_victim() and frames the policy looked at per eviction.
//   buffer_bench [--pages N] [--warmup W] [--references R] [--pools 1,2,5,...]
//                [--policies random,clock,...] [--workloads uniform,zipf] [--theta T]
//                [--repetitions K] [--seed S] [--csv FILE]
// Each repetition draws new streams (and a new RANDOM seed); every policy and pool size of a
// repetition sees the same streams. The pool starts empty; the first W references warm it and
// are not counted, so what remains at 100% are compulsory misses (pages first referenced late).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/machine_info.h"
#include "bench/page_stream.h"
#include "engine/buffer/replacement_policy.h"

namespace pmcached::bench {
namespace {

using buffer::EvictionKind;
using buffer::FrameId;
using buffer::kNoFrame;
using Clock = std::chrono::steady_clock;

struct Run {
  std::uint64_t references = 0, misses = 0, evictions = 0, examined = 0;
  double pick_ns = 0;  // per eviction, the clock's own cost taken out
};

// The cost of one steady_clock::now() pair, taken out of every timed pick.
double clock_overhead_ns() {
  constexpr int kPairs = 200000;
  Clock::duration total{};
  for (int i = 0; i < kPairs; ++i) {
    const auto a = Clock::now();
    total += Clock::now() - a;
  }
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(total).count()) /
         kPairs;
}

Run simulate(EvictionKind kind, std::size_t frames, std::uint32_t pages,
             const std::vector<std::uint32_t>& stream, std::size_t warmup, std::uint64_t seed,
             double overhead_ns) {
  auto policy = buffer::make_replacement_policy(kind, frames, seed);
  std::vector<FrameId> frame_of(pages + 1, kNoFrame);
  std::vector<std::uint32_t> page_in(frames, 0);
  const std::function<bool(FrameId)> evictable = [](FrameId) { return true; };
  std::size_t used = 0;
  Run run;
  Clock::duration picking{};
  std::uint64_t examined_before = 0;
  for (std::size_t i = 0; i < stream.size(); ++i) {
    const bool counted = i >= warmup;
    if (i == warmup) examined_before = policy->frames_examined();
    const std::uint32_t page = stream[i];
    run.references += counted;
    if (frame_of[page] != kNoFrame) {
      policy->on_hit(frame_of[page]);
      continue;
    }
    run.misses += counted;
    FrameId frame;
    if (used < frames) {
      frame = static_cast<FrameId>(used++);
    } else {
      const auto started = Clock::now();
      frame = policy->pick_victim(evictable);
      if (counted) {
        picking += Clock::now() - started;
        ++run.evictions;
      }
      if (frame == kNoFrame) {
        std::fprintf(stderr, "%s found no victim in a pool of evictable frames\n",
                     std::string(buffer::eviction_name(kind)).c_str());
        std::exit(1);
      }
      policy->on_evict(frame, page_in[frame], true);
      frame_of[page_in[frame]] = kNoFrame;
    }
    policy->on_load(frame, page);
    frame_of[page] = frame;
    page_in[frame] = page;
  }
  run.examined = policy->frames_examined() - examined_before;
  if (run.evictions != 0) {
    const double ns =
        static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(picking).count());
    run.pick_ns = std::max(0.0, ns / run.evictions - overhead_ns);
  }
  return run;
}

struct Spread {
  double median = 0, min = 0, max = 0;
};

Spread spread(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  const double median = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return {median, v.front(), v.back()};
}

std::string format(const Spread& s, const char* fmt) {
  char m[32], lo[32], hi[32], out[112];
  std::snprintf(m, sizeof m, fmt, s.median);
  std::snprintf(lo, sizeof lo, fmt, s.min);
  std::snprintf(hi, sizeof hi, fmt, s.max);
  std::snprintf(out, sizeof out, "%s [%s-%s]", m, lo, hi);
  return out;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    if (end > begin) out.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

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
  const double overhead = clock_overhead_ns();
  std::printf("# buffer_bench: replacement policies driven as the buffer manager drives them\n");
  std::printf("# machine: %u CPUs, %s; build: %s\n", cpu_count(), cpu_model().c_str(),
              build_type().c_str());
  std::printf(
      "# workload: %u data pages; per run %zu warm-up + %zu counted references from an empty "
      "pool;\n#   streams: uniform, and zipf theta %.2f (ranks scattered over the pages); "
      "every frame evictable\n",
      o.pages, o.warmup, o.references, o.theta);
  std::printf(
      "# repetitions: %u (new streams and RANDOM seed each); cells: median [min-max]\n"
      "# eviction cost: steady_clock around each pick_victim(), less %.1f ns for the clock "
      "itself\n\n",
      o.repetitions, overhead);
  std::fflush(stdout);

  std::FILE* csv = nullptr;
  if (!o.csv.empty()) {
    csv = std::fopen(o.csv.c_str(), "w");
    if (csv == nullptr) {
      std::fprintf(stderr, "cannot write %s\n", o.csv.c_str());
      return 2;
    }
    std::fprintf(csv,
                 "workload,theta,pages,pool_pct,frames,policy,rep,references,misses,miss_rate,"
                 "evictions,pick_ns,examined_per_eviction\n");
  }
  // (workload, pool index, policy) -> one value per repetition
  std::map<std::tuple<int, std::size_t, int>, std::vector<Run>> runs;
  for (unsigned rep = 1; rep <= o.repetitions; ++rep) {
    for (PageSkew skew : o.workloads) {
      const std::uint64_t stream_seed = o.seed * 1000 + rep * 10 + static_cast<int>(skew);
      const auto stream =
          make_page_stream(skew, o.pages, o.warmup + o.references, o.theta, stream_seed);
      for (std::size_t p = 0; p < o.pools.size(); ++p) {
        const auto frames =
            std::max<std::size_t>(1, static_cast<std::size_t>(o.pages * o.pools[p] / 100.0 + 0.5));
        for (EvictionKind kind : o.policies) {
          const Run r = simulate(kind, frames, o.pages, stream, o.warmup, stream_seed, overhead);
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
        for (const Run& r : runs[{static_cast<int>(skew), p, static_cast<int>(kind)}]) {
          if (r.evictions != 0 || !per_eviction) values.push_back(value(r));
        }
        std::printf(" %22s", values.empty() ? "-" : format(spread(values), fmt).c_str());
      }
      std::printf("\n");
    }
    std::printf("\n");
  };
  for (PageSkew skew : o.workloads) {
    table(
        skew, "miss rate (%)", false,
        [](const Run& r) { return 100.0 * static_cast<double>(r.misses) / r.references; }, "%.2f");
  }
  std::printf("eviction cost ('-': no evictions)\n\n");
  for (PageSkew skew : o.workloads) {
    table(
        skew, "ns per pick_victim()", true, [](const Run& r) { return r.pick_ns; }, "%.0f");
    table(
        skew, "frames examined per eviction", true,
        [](const Run& r) {
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
  CLI::App app{"buffer_bench: replacement policies (miss rate, eviction cost)"};
  bench::Options o;
  std::string pools = "1,2,5,10,20,50,100", policies = "random,clock,gclock,car,lru",
              workloads = "uniform,zipf";
  app.add_option("--pages", o.pages, "data pages")->check(CLI::Range(1u, 1u << 30));
  app.add_option("--warmup", o.warmup, "references per run before counting");
  app.add_option("--references", o.references, "counted references per run")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 32));
  app.add_option("--pools", pools, "pool sizes in % of the data pages");
  app.add_option("--policies", policies, "random, clock, gclock, car, lru");
  app.add_option("--workloads", workloads, "uniform, zipf");
  app.add_option("--theta", o.theta, "Zipf skew")->check(CLI::Range(0.01, 0.999));
  app.add_option("--repetitions", o.repetitions, "runs of the whole grid")
      ->check(CLI::Range(1u, 100u));
  app.add_option("--seed", o.seed, "stream seed");
  app.add_option("--csv", o.csv, "write one row per run to this CSV file");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  for (const std::string& p : bench::split_list(pools)) {
    const double pct = std::stod(p);
    if (pct <= 0 || pct > 100) {
      std::fprintf(stderr, "pool size %s%% is not in (0, 100]\n", p.c_str());
      return 2;
    }
    o.pools.push_back(pct);
  }
  for (const std::string& name : bench::split_list(policies)) {
    const auto kind = buffer::parse_eviction(name);
    if (!kind) {
      std::fprintf(stderr, "unknown policy '%s' (valid: random, clock, gclock, car, lru)\n",
                   name.c_str());
      return 2;
    }
    o.policies.push_back(*kind);
  }
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
  return bench::miss_rates(o);
}

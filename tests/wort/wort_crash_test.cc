// Crash tests of the wort engine with pm::CrashSimulator: each workload is crashed at EVERY
// persistence point (plain and adversarial), restarted from the crash image (recover + allocator
// rebuild), and checked: every operation that returned before the point is there, the one in
// flight is wholly there or wholly absent, the invariants and the allocator accounting hold, and
// the tree keeps working. A deliberately broken persist order must be caught.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/pm/persistence.h"
#include "engine/wort/wort_engine.h"
#include "tests/wort/wort_harness.h"

namespace pmcached::engine::wort::testing {
namespace {

constexpr std::size_t kRegionBytes = pm::kMinPoolSize;

struct Op {
  bool put;
  std::string key;
};

struct Trace {
  std::vector<std::uint64_t> begin, end;  // persistence points before / after each op
  std::vector<ItemRef> refs;              // the item each put published
};

Trace run_ops(Harness& h, const pm::CrashSimulator& sim, const std::vector<Op>& ops) {
  Trace t;
  Model ignored;
  for (const Op& op : ops) {
    t.begin.push_back(sim.persistence_points());
    if (op.put) {
      EXPECT_NE(h.put(op.key, ignored), UpsertStatus::kOutOfMemory);
      t.refs.push_back(ignored[op.key]);
    } else {
      (void)h.del(op.key, ignored);
      t.refs.push_back(kNoItem);
    }
    t.end.push_back(sim.persistence_points());
  }
  return t;
}

Model model_after(const std::vector<Op>& ops, const Trace& t, std::size_t count) {
  Model m;
  for (std::size_t i = 0; i < count; ++i) {
    if (ops[i].put) {
      m[ops[i].key] = t.refs[i];
    } else {
      m.erase(ops[i].key);
    }
  }
  return m;
}

std::string describe_difference(const Model& got, const Model& want) {
  for (const auto& [key, ref] : want) {
    const auto it = got.find(key);
    if (it == got.end()) return "missing key of " + std::to_string(key.size()) + " bytes";
    if (it->second != ref) return "a key has the wrong item";
  }
  return got.size() != want.size() ? "an extra key" : "";
}

// Crashes `ops` at point `k`, restarts and checks everything; "" when the contract holds.
std::string crash_and_check(const std::vector<Op>& ops, std::uint64_t k, bool adversarial) {
  pm::CrashSimulator sim(kRegionBytes);
  Harness h(kRegionBytes, &sim);
  sim.crash_at(k, adversarial, /*seed=*/k * 7919 + 1);
  const Trace t = run_ops(h, sim, ops);
  if (!sim.crash_image()) return "crash point not reached";
  std::size_t done = 0;
  while (done < ops.size() && t.end[done] <= k) ++done;
  const Model before = model_after(ops, t, done);
  const bool in_flight = done < ops.size() && t.begin[done] < k;
  const Model after = in_flight ? model_after(ops, t, done + 1) : before;

  Harness r(*sim.crash_image());
  std::string problems = r.restart_problems() + r.check();
  Model got = r.contents();
  if (got != before && got != after) {
    problems += "after op " + std::to_string(done) + (in_flight ? " (in flight)" : "") + ": " +
                describe_difference(got, after) + " / " + describe_difference(got, before) + "; ";
  }
  // A further round on the recovered tree.
  for (int i = 0; i < 12; ++i)
    (void)r.put(numbered("after-", static_cast<std::uint64_t>(i * 37)), got);
  std::size_t n = 0;
  for (const auto& entry : Model(got)) {
    if (n++ % 2 == 0) (void)r.del(entry.first, got);
  }
  for (const auto& [key, ref] : got) {
    if (r.engine().lookup(key) != ref) problems += "lookup after the further round; ";
  }
  if (r.contents() != got) problems += "contents after the further round; ";
  problems += r.check();
  return problems;
}

// Runs `ops` crashed at every persistence point, plain and adversarial; returns the number of
// points that broke the contract (each reported unless `quiet`).
int crash_everywhere(const std::vector<Op>& ops, bool quiet = false) {
  pm::CrashSimulator sim(kRegionBytes);
  std::uint64_t first = 0, last = 0;
  {
    Harness h(kRegionBytes, &sim);
    first = sim.persistence_points();
    (void)run_ops(h, sim, ops);
    last = sim.persistence_points();
  }
  EXPECT_GT(last, first);
  int failures = 0;
  for (std::uint64_t k = first + 1; k <= last; ++k) {
    for (bool adversarial : {false, true}) {
      const std::string problems = crash_and_check(ops, k, adversarial);
      if (problems.empty()) continue;
      ++failures;
      if (!quiet) {
        ADD_FAILURE() << "crash at point " << k << " of " << first + 1 << ".." << last
                      << (adversarial ? " (adversarial)" : "") << ": " << problems;
      }
    }
  }
  return failures;
}

std::vector<Op> puts(const std::vector<std::string>& keys) {
  std::vector<Op> ops;
  for (const std::string& k : keys) ops.push_back({true, k});
  return ops;
}

// Splits at several depths: a push-down deep in the key, prefix mismatches in the stored and in
// the optimistic part of a prefix, root slots, and a replace.
std::vector<Op> split_workload() {
  return puts({be64(0x1122334455667788), be64(0x1122334455667799), be64(0x1122334455660000),
               be64(0x1122330000000000), be64(0x2000000000000000), be64(0x1100000000000000),
               be64(0x3000000000000001), be64(0x3000000000000002), be64(0x3000000000100000),
               be64(0x3000000000000001), be64(0x1122334455667788), be64(0x3100000000000000)});
}

// Lines recovery flushed (Algorithm 2 repairs) while running `body`.
template <typename Body>
std::uint64_t recovery_flushes(Body body) {
  pm::reset_counters();
  body();
  return pm::totals().by_kind[static_cast<std::size_t>(pm::OpKind::kRecovery)].lines_flushed;
}

TEST(WortCrash, SplitsAtSeveralDepthsSurviveEveryCrashPoint) {
  const std::uint64_t repairs =
      recovery_flushes([] { EXPECT_EQ(crash_everywhere(split_workload()), 0); });
  EXPECT_GT(repairs, 0u) << "no crash point left a header for Algorithm 2 to repair";
}

// Deletes that clear a slot, collapse onto a leaf, collapse onto a node (merged header), empty
// the tree, and inserts after that.
TEST(WortCrash, DeletesAndCollapsesSurviveEveryCrashPoint) {
  std::vector<Op> ops =
      puts({be64(0x1000000000000000), be64(0x1100000000000000), be64(0x1100000000000001),
            be64(0x1100000000000002), be64(0x1100000000000100), be64(0x1200000000000000)});
  for (std::uint64_t v : {0x1200000000000000ull, 0x1000000000000000ull, 0x1100000000000100ull,
                          0x1100000000000001ull, 0x1100000000000002ull, 0x1100000000000000ull}) {
    ops.push_back({false, be64(v)});
  }
  ops.push_back({true, be64(0x4242)});
  ops.push_back({true, be64(0x4243)});
  ops.push_back({false, be64(0x4242)});
  const std::uint64_t repairs = recovery_flushes([&] { EXPECT_EQ(crash_everywhere(ops), 0); });
  EXPECT_GT(repairs, 0u) << "no crash point fell between a collapse and its header store";
}

TEST(WortCrash, PrefixKeysSurviveEveryCrashPoint) {
  std::vector<Op> ops = puts({"abc", "a", "ab", "abcd", "abd", "b", "ab"});
  for (const char* k : {"abc", "a", "abd", "ab", "abcd"}) ops.push_back({false, k});
  ops.push_back({true, "a"});
  EXPECT_EQ(crash_everywhere(ops), 0);
}

TEST(WortCrash, RandomSmallWorkloadsSurviveEveryCrashPoint) {
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<Op> ops;
    for (int i = 0; i < 30; ++i) {
      std::string key = (rng() % 2 == 0) ? numbered("k", rng() % 12) : be64(rng() % 12 << 20);
      ops.push_back({rng() % 3 != 0, key});
    }
    EXPECT_EQ(crash_everywhere(ops), 0) << "seed " << seed;
  }
}

// A large workload crashed at a handful of random points.
TEST(WortCrash, LargeWorkloadSurvivesRandomCrashPoints) {
  std::mt19937_64 rng(99);
  std::vector<Op> ops;
  for (int i = 0; i < 100000; ++i) {
    std::string key =
        (rng() % 2 == 0) ? numbered("user:", rng() % 4000) : be64((rng() % 4000) * 0x10001);
    ops.push_back({rng() % 4 != 0, key});
  }
  pm::CrashSimulator sim(kRegionBytes);
  std::uint64_t first = 0, last = 0;
  {
    Harness h(kRegionBytes, &sim);
    first = sim.persistence_points();
    (void)run_ops(h, sim, ops);
    last = sim.persistence_points();
  }
  EXPECT_GT(last - first, ops.size());
  for (int i = 0; i < 4; ++i) {
    const std::uint64_t k = first + 1 + rng() % (last - first);
    EXPECT_EQ(crash_and_check(ops, k, /*adversarial=*/i % 2 == 1), "") << "point " << k;
  }
}

// The simulator must catch an engine that publishes a node before persisting it.
TEST(WortCrash, SimulatorCatchesABrokenPersistOrder) {
  FaultInjection::skip_new_node_flush = true;
  const int failures = crash_everywhere(split_workload(), /*quiet=*/true);
  FaultInjection::skip_new_node_flush = false;
  EXPECT_GT(failures, 0) << "a commit before the node is persisted went unnoticed";
}

}  // namespace
}  // namespace pmcached::engine::wort::testing

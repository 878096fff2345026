// The `crash` engine suite (tests/engine/engine_suites.h: every engine registered persistent):
// workloads crashed at EVERY persistence point (plain and adversarial) or, for the large one, at
// random points; see index_crash.h for what is checked after each restart. A deliberately broken
// persist order (engine/pm/fault_injection.h) must be caught.
#include "tests/index/index_crash.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/pm/fault_injection.h"
#include "tests/engine/engine_suites.h"
#include "tests/index/recovery_crash.h"

namespace pmcached::engine::testing {
namespace {

// Under a sanitizer the large workload is scaled down (it reruns once per crash point).
#ifdef PMCACHED_SANITIZED_BUILD
constexpr int kLargeWorkloadOps = 20000;
#else
constexpr int kLargeWorkloadOps = 100000;
#endif

class IndexCrashTest : public ::testing::TestWithParam<std::string> {};

TEST_P(IndexCrashTest, SplitsAtSeveralDepthsSurviveEveryCrashPoint) {
  EXPECT_EQ(crash_everywhere(GetParam(), split_workload()), 0);
}

TEST_P(IndexCrashTest, DeletesAndCollapsesSurviveEveryCrashPoint) {
  EXPECT_EQ(crash_everywhere(GetParam(), delete_workload()), 0);
}

TEST_P(IndexCrashTest, PrefixKeysSurviveEveryCrashPoint) {
  std::vector<Op> ops = puts({"abc", "a", "ab", "abcd", "abd", "b", "ab"});
  for (const char* k : {"abc", "a", "abd", "ab", "abcd"}) ops.push_back({false, k});
  ops.push_back({true, "a"});
  EXPECT_EQ(crash_everywhere(GetParam(), ops), 0);
}

TEST_P(IndexCrashTest, RandomSmallWorkloadsSurviveEveryCrashPoint) {
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<Op> ops;
    for (int i = 0; i < 30; ++i) {
      std::string key = (rng() % 2 == 0) ? numbered("k", rng() % 12) : be64(rng() % 12 << 20);
      ops.push_back({rng() % 3 != 0, key});
    }
    EXPECT_EQ(crash_everywhere(GetParam(), ops), 0) << "seed " << seed;
  }
}

// A large workload crashed at a handful of random points.
TEST_P(IndexCrashTest, LargeWorkloadSurvivesRandomCrashPoints) {
  std::mt19937_64 rng(99);
  std::vector<Op> ops;
  for (int i = 0; i < kLargeWorkloadOps; ++i) {
    std::string key =
        (rng() % 2 == 0) ? numbered("user:", rng() % 4000) : be64((rng() % 4000) * 0x10001);
    ops.push_back({rng() % 4 != 0, key});
  }
  const PointRange range = traced_run(GetParam(), ops);
  EXPECT_GT(range.last - range.first, ops.size());
  for (int i = 0; i < 4; ++i) {
    const std::uint64_t k = range.first + 1 + rng() % (range.last - range.first);
    EXPECT_EQ(crash_and_check(GetParam(), ops, k, /*adversarial=*/i % 2 == 1), "") << "point " << k;
  }
}

// The simulator must catch an engine that publishes a node before persisting it. The workload
// makes new nodes in every engine (radix nodes and growth; B-tree leaf and root splits); it is
// crashed inside the ops that change the node bytes, where the fault acts. Without the fault those
// ops survive every point, so the failures with the fault are the fault's.
TEST_P(IndexCrashTest, SimulatorCatchesABrokenPersistOrder) {
  const std::vector<Op> ops = leaf_split_workload();
  const std::vector<std::size_t> node_ops = ops_changing_stat(GetParam(), ops, "node_bytes");
  ASSERT_FALSE(node_ops.empty());
  EXPECT_EQ(crash_everywhere(GetParam(), ops, {.quiet = false, .crash_ops = node_ops}), 0)
      << "the workload fails without the fault";
  int failures = 0;
  {
    const pm::FaultScope fault(pm::Fault::kSkipNewNodeFlush);
    failures = crash_everywhere(GetParam(), ops, {.quiet = true, .crash_ops = node_ops});
  }
  EXPECT_GT(failures, 0) << "a commit before the node is persisted went unnoticed";
}

INSTANTIATE_ENGINE_SUITE(crash, IndexCrashTest);
ENGINE_SUITES_CHECK(IndexCrashTest)

}  // namespace
}  // namespace pmcached::engine::testing

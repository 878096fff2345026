// fptree-specific tests (engine/fptree): fingerprints filter before keys, leaf splits and the
// DRAM inner levels, unlinking emptied leaves, the start-up rebuild, and crashes at every point
// of splits and unlinks, on every replay path of the split micro-log, and during the start-up
// itself. The suites every persistent engine shares (tests/index) run over fptree as well.
#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/engine_registry.h"
#include "engine/fptree/fptree_factory.h"
#include "engine/fptree/fptree_leaf.h"
#include "tests/index/index_crash.h"
#include "tests/index/index_harness.h"
#include "tests/index/recovery_crash.h"

namespace pmcached::engine::testing {
namespace {

constexpr std::size_t kPoolBytes = 64u << 20;
const std::string kEngine = "fptree";

TEST(FpTreeTest, AFullLeafSplitsInTwoAndEveryKeyStaysReachable) {
  Harness h(kEngine, kPoolBytes);
  Model model;
  const std::vector<std::string> keys = shuffled_keys(fptree::kLeafSlots + 1, 3);
  for (std::size_t i = 0; i < fptree::kLeafSlots; ++i)
    ASSERT_EQ(h.put(keys[i], model), UpsertStatus::kInserted);
  EXPECT_EQ(stat_number(h.engine(), "nodes_leaf"), 1u);
  EXPECT_EQ(stat_number(h.engine(), "leaf_splits"), 0u);
  ASSERT_EQ(h.put(keys.back(), model), UpsertStatus::kInserted);
  EXPECT_EQ(stat_number(h.engine(), "nodes_leaf"), 2u);
  EXPECT_EQ(stat_number(h.engine(), "leaf_splits"), 1u);
  EXPECT_EQ(h.contents(), model);
  EXPECT_EQ(h.check(), "");
}

TEST(FpTreeTest, InnerLevelsGrowWithTheLeavesAndGiveTheLeafDepth) {
  Harness h(kEngine, kPoolBytes);
  Model model;
  for (const std::string& k : shuffled_keys(30000, 4))
    ASSERT_EQ(h.put(k, model), UpsertStatus::kInserted);
  const std::uint64_t leaves = stat_number(h.engine(), "nodes_leaf");
  const std::uint64_t levels = stat_number(h.engine(), "inner_levels");
  // Random inserts leave leaves between half and entirely full.
  EXPECT_GE(leaves, 30000 / fptree::kLeafSlots);
  EXPECT_LE(leaves, 2 * 30000 / fptree::kLeafSlots + 1);
  EXPECT_EQ(levels, 2u);  // ~900 leaves under nodes of at most 256
  EXPECT_EQ(stat_of(h.engine(), "leaf_depth_avg"), "3.00");
  EXPECT_EQ(h.contents(), model);
  EXPECT_EQ(h.check(), "");
}

// A lookup compares a key only where the fingerprint matches: about one key per hit, and
// almost none for a miss.
TEST(FpTreeTest, FingerprintsAreComparedBeforeAnyKey) {
  std::vector<std::string> keys = shuffled_keys(fptree::kLeafSlots, 5);
  CountingEngine c(kEngine, keys);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(c.engine().upsert(keys[i], CountingEngine::ref(i)).status, UpsertStatus::kInserted);
  }
  c.reset();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(c.engine().lookup(keys[i]), CountingEngine::ref(i));
  }
  // 48 hits; each other entry matches a fingerprint with probability 1/256.
  EXPECT_LE(c.reads(), keys.size() + 30);
  c.reset();
  for (std::uint64_t i = 0; i < 200; ++i) ASSERT_EQ(c.engine().lookup(be64(i)), kNoItem);
  EXPECT_LE(c.reads(), 200u * 48u / 256u * 2u + 10u);
}

TEST(FpTreeTest, EmptiedLeavesAreUnlinkedAndFreed) {
  Harness h(kEngine, kPoolBytes);
  Model model;
  for (std::uint64_t i = 0; i < 1000; ++i)
    ASSERT_EQ(h.put(be64(i), model), UpsertStatus::kInserted);
  const std::uint64_t leaves = stat_number(h.engine(), "nodes_leaf");
  ASSERT_GT(leaves, 20u);
  // Ascending inserts split off the top half each time: delete the first 400 keys, which
  // empties whole leaves at the head of the chain, then every other key.
  for (std::uint64_t i = 0; i < 400; ++i) ASSERT_TRUE(h.del(be64(i), model));
  EXPECT_LT(stat_number(h.engine(), "nodes_leaf"), leaves);
  EXPECT_EQ(h.check(), "");
  for (std::uint64_t i = 400; i < 1000; ++i) ASSERT_TRUE(h.del(be64(i), model));
  EXPECT_EQ(stat_number(h.engine(), "nodes_leaf"), 0u);
  EXPECT_EQ(h.check(), "");  // the allocator's accounting: every leaf was freed
  ASSERT_EQ(h.put(be64(7), model), UpsertStatus::kInserted);
  EXPECT_EQ(h.engine().lookup(be64(7)), model[be64(7)]);
  EXPECT_EQ(h.check(), "");
}

TEST(FpTreeTest, ARestartRebuildsTheInnerNodesFromTheLeafChain) {
  pm::CrashSimulator sim(kCrashRegionBytes);
  Model model;
  std::uint64_t leaves = 0;
  {
    Harness h(kEngine, kCrashRegionBytes, &sim);
    for (const std::string& k : shuffled_keys(8000, 6))
      ASSERT_EQ(h.put(k, model), UpsertStatus::kInserted);
    leaves = stat_number(h.engine(), "nodes_leaf");
  }
  Harness restarted(kEngine, sim.image());
  EXPECT_EQ(restarted.restart_problems(), "");
  EXPECT_EQ(restarted.engine().size(), model.size());
  EXPECT_EQ(stat_number(restarted.engine(), "nodes_leaf"), leaves);
  // ~230 leaves: one node of 256 before the restart; the rebuild fills nodes to 3/4 (two nodes
  // under a root), leaving room for the splits to come.
  EXPECT_EQ(stat_number(restarted.engine(), "inner_levels"), 2u);
  EXPECT_EQ(stat_of(restarted.engine(), "log_replays"), "0");
  for (const auto& [key, ref] : model) ASSERT_EQ(restarted.engine().lookup(key), ref);
  EXPECT_EQ(restarted.contents(), model);
  EXPECT_EQ(restarted.check(), "");
}

// Mixed puts and deletes over few keys: splits and unlinks, each crashed at every point.
std::vector<Op> churn_workload() {
  std::mt19937_64 rng(8);
  std::vector<Op> ops = puts(shuffled_keys(150, 9));
  for (int i = 0; i < 250; ++i) {
    ops.push_back({rng() % 3 != 0, be64((rng() % 160 + 1) * 0x9E3779B9ull)});
  }
  // Empty the lower three quarters of the key range, which unlinks whole leaves.
  for (std::uint64_t i = 1; i <= 120; ++i) ops.push_back({false, be64(i * 0x9E3779B9ull)});
  return ops;
}

TEST(FpTreeCrashTest, EverySplitSurvivesEveryCrashPoint) {
  const std::vector<Op> ops = churn_workload();
  const std::vector<std::size_t> splits = ops_changing_stat(kEngine, ops, "leaf_splits");
  ASSERT_GE(splits.size(), 3u);
  EXPECT_EQ(crash_everywhere(kEngine, ops, {.quiet = false, .crash_ops = splits}), 0);
}

TEST(FpTreeCrashTest, EveryUnlinkSurvivesEveryCrashPoint) {
  const std::vector<Op> ops = churn_workload();
  std::vector<std::size_t> unlinks = ops_changing_stat(kEngine, ops, "nodes_leaf");
  const std::vector<std::size_t> splits = ops_changing_stat(kEngine, ops, "leaf_splits");
  std::erase_if(unlinks, [&](std::size_t i) {
    return std::find(splits.begin(), splits.end(), i) != splits.end();
  });
  ASSERT_GE(unlinks.size(), 2u);
  EXPECT_EQ(crash_everywhere(kEngine, ops, {.quiet = false, .crash_ops = unlinks}), 0);
}

// A crash inside a split leaves the micro-log for the restart. Both of its replay paths are
// reached (the split rolled back: same leaf count; rolled forward: one leaf more), and a crash
// of the replay itself, at each of its persistence points, is replayed again.
TEST(FpTreeCrashTest, EveryReplayPathOfTheSplitLogAndCrashesDuringTheReplay) {
  const std::vector<Op> ops = puts(shuffled_keys(fptree::kLeafSlots + 1, 10));
  Trace t;
  (void)traced_run(kEngine, ops, &t);
  const std::size_t split_op = ops.size() - 1;
  int rolled_back = 0, rolled_forward = 0;
  for (std::uint64_t k = t.begin[split_op] + 1; k <= t.end[split_op]; ++k) {
    pm::CrashSimulator sim(kCrashRegionBytes);
    {
      Harness h(kEngine, kCrashRegionBytes, &sim);
      sim.crash_at(k);
      (void)run_ops(h, sim, ops);
    }
    ASSERT_TRUE(sim.crash_image().has_value());
    Harness restarted(kEngine, *sim.crash_image());
    ASSERT_EQ(restarted.check(), "") << "point " << k;
    if (stat_of(restarted.engine(), "log_replays") == "1") {
      (stat_number(restarted.engine(), "nodes_leaf") == 1 ? rolled_back : rolled_forward)++;
      const RecoveryCrashResult r = crash_recovery_everywhere(kEngine, ops, k, false);
      EXPECT_EQ(r.failures, 0) << "point " << k;
      EXPECT_GT(r.restart_points, 1u) << "a replay persists something";
    }
  }
  EXPECT_GT(rolled_back, 0);
  EXPECT_GT(rolled_forward, 0);
}

TEST(FpTreeCrashTest, CrashesDuringTheStartUpAfterRandomCrashesKeepTheContract) {
  const std::vector<Op> ops = churn_workload();
  const PointRange range = traced_run(kEngine, ops);
  std::mt19937_64 rng(12);
  for (int i = 0; i < 6; ++i) {
    const std::uint64_t k = range.first + 1 + rng() % (range.last - range.first);
    EXPECT_EQ(crash_recovery_everywhere(kEngine, ops, k, i % 2 == 1).failures, 0) << k;
  }
}

}  // namespace
}  // namespace pmcached::engine::testing

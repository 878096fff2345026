// wbtree crash tests (the shared machinery of tests/index): every split kind — a root leaf split,
// a leaf split below the root, a root inner split and an inner split below the root — crashed at
// every persistence point (plain and adversarial); the redo log replayed from every point after
// its commit, and those replays themselves crashed at each of their persistence points; nodes left
// with bit 0 clear re-sorted by recovery; the unlink of a first child, an unlink cascade and the
// root collapse crashed at every point. The split ops are found by reading the engine's own
// leaf_splits / inner_splits / root_splits counters after each op of an uncrashed run.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/pm/crash_simulator.h"
#include "engine/wbtree/wbtree_node.h"
#include "tests/index/recovery_crash.h"
#include "tests/wbtree/wbtree_shape.h"

namespace pmcached::engine::wbtree::testing {
namespace {

using ::pmcached::engine::testing::crash_everywhere;
using ::pmcached::engine::testing::crash_recovery_everywhere;
using ::pmcached::engine::testing::kCrashRegionBytes;
using ::pmcached::engine::testing::Model;
using ::pmcached::engine::testing::ops_changing_stat;
using ::pmcached::engine::testing::run_ops;
using ::pmcached::engine::testing::stat_number;
using ::pmcached::engine::testing::Trace;
using ::pmcached::engine::testing::traced_run;

// Under a sanitizer the recovery crashes are sampled (every persistence point of the workload is
// still crashed once).
#ifdef PMCACHED_SANITIZED_BUILD
constexpr std::uint64_t kRecoveryCrashStride = 3;
#else
constexpr std::uint64_t kRecoveryCrashStride = 1;
#endif

// The image of `ops` crashed (plainly) at point `k`.
std::vector<char> crash_image(const std::vector<Op>& ops, std::uint64_t k) {
  pm::CrashSimulator sim(kCrashRegionBytes);
  Harness h(kEngine, kCrashRegionBytes, &sim);
  sim.crash_at(k);
  (void)run_ops(h, sim, ops);
  EXPECT_TRUE(sim.crash_image().has_value());
  return sim.crash_image().value_or(std::vector<char>{});
}

// `ops` with the puts continued until `stat` reaches `target`.
std::vector<Op> puts_until(const std::string& stat_name, std::uint64_t target) {
  Harness h(kEngine, kCrashRegionBytes);
  Model model;
  std::vector<Op> ops;
  for (std::uint64_t i = 1; stat_number(h.engine(), stat_name) < target; ++i) {
    ops.push_back(ascending(i, 1)[0]);
    EXPECT_EQ(h.put(ops.back().key, model), UpsertStatus::kInserted);
    if (i > 5000) break;
  }
  return ops;
}

std::vector<std::size_t> minus(std::vector<std::size_t> a, const std::vector<std::size_t>& b) {
  a.erase(std::remove_if(a.begin(), a.end(),
                         [&](std::size_t x) { return std::count(b.begin(), b.end(), x) > 0; }),
          a.end());
  return a;
}

TEST(WbTreeCrash, RootLeafSplitSurvivesEveryCrashPoint) {
  const std::vector<Op> ops = ascending(1, kLeafFanout + 1);
  const std::vector<std::size_t> splits = ops_changing_stat(kEngine, ops, "root_splits");
  ASSERT_EQ(splits, std::vector<std::size_t>{kLeafFanout});
  EXPECT_EQ(crash_everywhere(kEngine, ops, {.quiet = false, .crash_ops = splits}), 0);
}

TEST(WbTreeCrash, LeafSplitBelowTheRootSurvivesEveryCrashPoint) {
  const std::vector<Op> ops = ascending(1, 80);
  const std::vector<std::size_t> splits = minus(ops_changing_stat(kEngine, ops, "leaf_splits"),
                                                ops_changing_stat(kEngine, ops, "root_splits"));
  ASSERT_EQ(splits.size(), 1u);
  EXPECT_EQ(crash_everywhere(kEngine, ops, {.quiet = false, .crash_ops = splits}), 0);
}

// Ascending keys up to the second inner split: the first is a root split (the root inner node
// splits, then the full leaf below it), the second an inner split below the root.
TEST(WbTreeCrash, InnerSplitsAndRootGrowthSurviveEveryCrashPoint) {
  const std::vector<Op> ops = puts_until("inner_splits", 2);
  const std::vector<std::size_t> splits = ops_changing_stat(kEngine, ops, "inner_splits");
  ASSERT_EQ(splits.size(), 2u);
  EXPECT_EQ(ops_changing_stat(kEngine, ops, "root_splits").back(), splits[0]);
  EXPECT_EQ(crash_everywhere(kEngine, ops, {.quiet = false, .crash_ops = splits}), 0);
}

// Every plain crash after a split's log commit and before the log is cleared makes the restart
// replay the log: the commit point, the link (1 point for a root split, 2 for an entry insert into
// the parent: the entry and the slot array share a fence, then the bitmap commit) and the
// truncation (3). Each of those replays is then crashed at each of its own persistence points,
// and a second restart must still be right.
struct ReplayCase {
  const char* name;
  std::vector<Op> ops;
  std::size_t op;
  std::uint64_t replaying_points;
};

void check_replays(const ReplayCase& c) {
  SCOPED_TRACE(c.name);
  Trace t;
  (void)traced_run(kEngine, c.ops, &t);
  std::vector<std::uint64_t> replaying;
  for (std::uint64_t k = t.begin[c.op] + 1; k <= t.end[c.op]; ++k) {
    Harness restarted(kEngine, crash_image(c.ops, k));
    EXPECT_EQ(restarted.restart_problems() + restarted.check(), "") << "point " << k;
    if (stat_number(restarted.engine(), "log_replays") > 0) replaying.push_back(k);
  }
  ASSERT_EQ(replaying.size(), c.replaying_points);
  for (std::size_t i = 1; i < replaying.size(); ++i) {
    EXPECT_EQ(replaying[i], replaying[i - 1] + 1) << "the replaying points are one stretch";
  }
  for (std::size_t i = 0; i < replaying.size(); i += kRecoveryCrashStride) {
    for (bool adversarial : {false, true}) {
      const auto result = crash_recovery_everywhere(kEngine, c.ops, replaying[i], adversarial);
      EXPECT_EQ(result.failures, 0);
      EXPECT_GT(result.restart_points, 0u);
    }
  }
}

TEST(WbTreeCrash, RootSplitLogReplaysFromEveryPointAndSurvivesCrashedReplays) {
  check_replays({"root leaf split", ascending(1, kLeafFanout + 1), kLeafFanout, 1 + 1 + 3});
}

TEST(WbTreeCrash, ParentInsertLogReplaysFromEveryPointAndSurvivesCrashedReplays) {
  const std::vector<Op> ops = ascending(1, 80);
  const auto splits = minus(ops_changing_stat(kEngine, ops, "leaf_splits"),
                            ops_changing_stat(kEngine, ops, "root_splits"));
  ASSERT_EQ(splits.size(), 1u);
  check_replays({"leaf split below the root", ops, splits[0], 1 + 2 + 3});
}

TEST(WbTreeCrash, InnerSplitLogReplaysFromEveryPointAndSurvivesCrashedReplays) {
  const std::vector<Op> ops = puts_until("inner_splits", 2);
  // The op splits an inner node below the root (parent insert), then the leaf below it (another
  // parent insert): two replaying stretches of 6 points, back to back but for the log clear.
  const std::size_t op = ops.size() - 1;
  Trace t;
  (void)traced_run(kEngine, ops, &t);
  std::uint64_t replaying = 0;
  for (std::uint64_t k = t.begin[op] + 1; k <= t.end[op]; ++k) {
    Harness restarted(kEngine, crash_image(ops, k));
    EXPECT_EQ(restarted.restart_problems() + restarted.check(), "") << "point " << k;
    if (stat_number(restarted.engine(), "log_replays") > 0) {
      ++replaying;
      if (replaying % (4 * kRecoveryCrashStride) == 1) {
        EXPECT_EQ(crash_recovery_everywhere(kEngine, ops, k, /*adversarial=*/false).failures, 0);
      }
    }
  }
  EXPECT_EQ(replaying, 2u * (1 + 2 + 3));
}

// Crashes inside entry changes leave nodes whose slot arrays are not valid — leaves (the entry
// insert, the truncation of a split leaf, which clears bit 0) and inner nodes (the separator
// inserted into the parent, whose new order[] may reach PM before the bitmap that lists it, bit 0
// staying set): recovery re-sorts their slot arrays from the bitmaps.
TEST(WbTreeCrash, NodesWithAnInvalidSlotArrayGetItRebuilt) {
  const std::vector<Op> ops = ascending(1, 80);
  const auto splits = minus(ops_changing_stat(kEngine, ops, "leaf_splits"),
                            ops_changing_stat(kEngine, ops, "root_splits"));
  ASSERT_EQ(splits.size(), 1u);
  Trace t;
  (void)traced_run(kEngine, ops, &t);
  std::size_t invalid_leaf_images = 0, invalid_inner_images = 0, bit0_set_images = 0;
  for (std::uint64_t k = t.begin[splits[0]] + 1; k <= t.end[splits[0]]; ++k) {
    const std::vector<char> image = crash_image(ops, k);
    const InvalidNodes before = invalid_nodes(*pm::PmRegion::from_image(image));
    invalid_leaf_images += before.leaves > 0 ? 1 : 0;
    invalid_inner_images += before.inners > 0 ? 1 : 0;
    bit0_set_images += before.with_bit0_set > 0 ? 1 : 0;
    Harness restarted(kEngine, image);
    EXPECT_EQ(restarted.restart_problems() + restarted.check(), "") << "point " << k;
    const InvalidNodes after = invalid_nodes(restarted.region());
    EXPECT_EQ(after.leaves + after.inners, 0u) << "point " << k;
  }
  EXPECT_GT(invalid_leaf_images, 0u);
  EXPECT_GT(invalid_inner_images, 0u);
  EXPECT_GT(bit0_set_images, 0u);
}

// A tree of height 3 whose root has two inner children; then the keys under the left one are
// deleted in ascending order: its first leaf is unlinked first (a first child: the next entry
// loses its key block), ..., finally the left inner node with its last leaf (a cascade), and the
// root collapses onto the right inner node. Crashed at every point of those three deletes.
TEST(WbTreeCrash, UnlinksCascadeAndRootCollapseSurviveEveryCrashPoint) {
  std::vector<Op> ops = puts_until("root_splits", 2);
  const std::size_t puts = ops.size();
  {
    Harness h(kEngine, kCrashRegionBytes);
    Model model;
    for (const Op& op : ops) (void)h.put(op.key, model);
    const std::vector<std::uint64_t> halves = children_of(h.region(), tree_root(h.region()));
    ASSERT_EQ(halves.size(), 2u);
    for (const std::string& key : keys_under(h.region(), halves[0])) ops.push_back({false, key});
  }
  std::vector<std::size_t> leaf_unlinks;
  for (std::size_t i : ops_changing_stat(kEngine, ops, "nodes_leaf")) {
    if (i >= puts) leaf_unlinks.push_back(i);
  }
  std::vector<std::size_t> inner_unlinks;
  for (std::size_t i : ops_changing_stat(kEngine, ops, "nodes_inner")) {
    if (i >= puts) inner_unlinks.push_back(i);
  }
  ASSERT_GE(leaf_unlinks.size(), 2u);
  ASSERT_EQ(inner_unlinks, std::vector<std::size_t>{ops.size() - 1});
  const std::vector<std::size_t> crash_ops = {leaf_unlinks[0], leaf_unlinks[1], ops.size() - 1};
  EXPECT_EQ(crash_everywhere(kEngine, ops, {.quiet = false, .crash_ops = crash_ops}), 0);
}

}  // namespace
}  // namespace pmcached::engine::wbtree::testing

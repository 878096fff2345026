// NV-Tree crash tests with the shared machinery (tests/index/index_crash.h, recovery_crash.h):
// workloads crashed at every persistence point (plain and adversarial) of the ops that do
// something NV-Tree-specific — found by reading the engine's own statistics after each op of an
// uncrashed run: leaf splits, compactions, a delete that finds its leaf full, unlinks of emptied
// leaves (the first, a middle and the last leaf), the split whose PLN overflows and rebuilds the
// inner array — and crashes of the restart itself. After each restart the harness checks the
// contract, the inspector's invariants, the allocator accounting and that the DRAM array rebuilt
// from the leaves routes every key to its leaf (lookup of every leaf entry, scan order).
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/pm/crash_simulator.h"
#include "engine/pm/fault_injection.h"
#include "engine/pm/persistence.h"
#include "tests/index/index_crash.h"
#include "tests/index/recovery_crash.h"

namespace pmcached::engine::testing {
namespace {

const std::string kEngine = "nvtree";

// Under a sanitizer only every few interesting ops are crashed (each point reruns the workload).
#ifdef PMCACHED_SANITIZED_BUILD
constexpr std::size_t kOpStride = 3;
#else
constexpr std::size_t kOpStride = 1;
#endif

std::vector<std::size_t> every_nth(const std::vector<std::size_t>& ops) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < ops.size(); i += kOpStride) out.push_back(ops[i]);
  return out;
}

std::vector<Op> ascending_puts(std::uint64_t first, std::uint64_t count) {
  std::vector<Op> ops;
  for (std::uint64_t i = 0; i < count; ++i) ops.push_back({true, be64(first + i)});
  return ops;
}

// Crashes `ops` at every point of the ops that changed statistic `stat` (at least `min_ops`).
void crash_where_stat_changes(const std::vector<Op>& ops, const char* stat, std::size_t min_ops) {
  const std::vector<std::size_t> changed = ops_changing_stat(kEngine, ops, stat);
  ASSERT_GE(changed.size(), min_ops) << stat;
  EXPECT_EQ(crash_everywhere(kEngine, ops, {.quiet = false, .crash_ops = every_nth(changed)}), 0);
}

TEST(NvTreeCrashTest, LeafSplitsSurviveEveryCrashPoint) {
  std::vector<Op> ops = ascending_puts(1, 150);
  std::shuffle(ops.begin(), ops.end(), std::mt19937_64(21));
  for (std::uint64_t v : {3, 77, 140}) ops.push_back({true, be64(v)});  // replaces after splits
  crash_where_stat_changes(ops, "leaf_splits", 3);
}

// The same crash points catch new leaves published before they are persisted.
TEST(NvTreeCrashTest, SplitsAndCompactionsPublishedUnpersistedAreCaught) {
  std::vector<Op> ops = ascending_puts(1, 59);
  for (std::uint64_t v = 1; v <= 12; ++v) ops.push_back({false, be64(v)});
  for (std::uint64_t v = 13; v <= 29; ++v) ops.push_back({true, be64(v)});  // compaction
  std::vector<std::size_t> changed = ops_changing_stat(kEngine, ops, "leaf_splits");
  ASSERT_EQ(changed.size(), 1u);
  const std::vector<std::size_t> compactions = ops_changing_stat(kEngine, ops, "leaf_compactions");
  ASSERT_EQ(compactions.size(), 1u);
  for (std::size_t op : {changed[0], compactions[0]}) {
    EXPECT_EQ(crash_everywhere(kEngine, ops, {.quiet = false, .crash_ops = {op}}), 0);
    int failures = 0;
    {
      const pm::FaultScope fault(pm::Fault::kSkipNewNodeFlush);
      failures = crash_everywhere(kEngine, ops, {.quiet = true, .crash_ops = {op}});
    }
    EXPECT_GT(failures, 0) << "op " << op;
  }
}

TEST(NvTreeCrashTest, CompactionsSurviveEveryCrashPoint) {
  std::vector<Op> ops = ascending_puts(1, 20);
  for (int round = 0; round < 3; ++round) {  // replaces fill the leaf: compactions
    for (std::uint64_t v = 1; v <= 20; ++v) ops.push_back({true, be64(v)});
  }
  ops.push_back({false, be64(4)});
  crash_where_stat_changes(ops, "leaf_compactions", 2);
}

TEST(NvTreeCrashTest, ADeleteThatSplitsAFullLeafSurvivesEveryCrashPoint) {
  std::vector<Op> ops = ascending_puts(1, 58);
  ops.push_back({false, be64(30)});
  ops.push_back({false, be64(2)});
  const std::vector<std::size_t> changed = ops_changing_stat(kEngine, ops, "leaf_splits");
  ASSERT_EQ(changed, std::vector<std::size_t>{58});
  EXPECT_EQ(crash_everywhere(kEngine, ops, {.quiet = false, .crash_ops = {58, 59}}), 0);
}

// Three leaves and more; then the middle one emptied, then the first (meta.root moves), then
// everything (the last unlink sets meta.root to 0).
TEST(NvTreeCrashTest, UnlinksOfEmptiedLeavesSurviveEveryCrashPoint) {
  const std::uint64_t n = 3 * 58;
  std::vector<Op> ops = ascending_puts(1, n);
  // Ascending splits leave leaves of 29 keys, the last one fuller: [1,29], [30,58], ...
  for (std::uint64_t v = 30; v <= 58; ++v) ops.push_back({false, be64(v)});
  for (std::uint64_t v = 1; v <= 29; ++v) ops.push_back({false, be64(v)});
  for (std::uint64_t v = 59; v <= n; ++v) ops.push_back({false, be64(v)});
  ops.push_back({true, be64(1000)});
  std::vector<std::size_t> unlinks;
  for (std::size_t i : ops_changing_stat(kEngine, ops, "nodes_leaf")) {
    if (i >= n && !ops[i].put) unlinks.push_back(i);
  }
  ASSERT_GE(unlinks.size(), 4u);
  EXPECT_EQ(crash_everywhere(kEngine, ops, {.quiet = false, .crash_ops = every_nth(unlinks)}), 0);
}

// The split into a full PLN: its persistence is the split's, and a crash anywhere in it restarts
// into an array built from the leaves, whichever side of the commit it fell.
TEST(NvTreeCrashTest, TheSplitThatRebuildsTheInnerArraySurvivesEveryCrashPoint) {
  const std::vector<Op> ops = ascending_puts(1, 1100);
  const std::vector<std::size_t> rebuilds = ops_changing_stat(kEngine, ops, "inner_rebuilds");
  ASSERT_EQ(rebuilds.size(), 1u);
  EXPECT_EQ(crash_everywhere(kEngine, ops, {.quiet = false, .crash_ops = rebuilds}), 0);
}

// Start-up: recovery writes nothing (no log to replay), so crashing the restart at each of its
// own persistence points (the pool's and the allocator's) and restarting again must find the
// same tree. Crashed inside a split, a compaction and an unlink.
TEST(NvTreeCrashTest, ACrashDuringStartUpLeavesTheTreeIntact) {
  std::vector<Op> ops = ascending_puts(1, 70);                              // split at op 58
  for (std::uint64_t v = 1; v <= 20; ++v) ops.push_back({true, be64(v)});   // replaces
  for (std::uint64_t v = 1; v <= 29; ++v) ops.push_back({false, be64(v)});  // unlink
  Trace t;
  (void)traced_run(kEngine, ops, &t);
  for (std::size_t op : {std::size_t{58}, ops.size() - 1}) {
    for (std::uint64_t k = t.begin[op] + 1; k <= t.end[op]; k += kOpStride) {
      const RecoveryCrashResult r = crash_recovery_everywhere(kEngine, ops, k, k % 2 == 0);
      EXPECT_EQ(r.failures, 0) << "op " << op << " point " << k;
      EXPECT_GT(r.restart_points, 0u);  // the pool's start-up marks, the allocator rebuild
    }
  }
}

TEST(NvTreeCrashTest, RecoveryFlushesNothingAndRebuildsTheArrayFromTheLeaves) {
  const std::vector<Op> ops = ascending_puts(1, 1100);
  Trace t;
  const PointRange range = traced_run(kEngine, ops, &t);
  const std::vector<std::size_t> rebuilds = ops_changing_stat(kEngine, ops, "inner_rebuilds");
  ASSERT_EQ(rebuilds.size(), 1u);
  // Crashed right before and right after the commit of the rebuilding split.
  for (std::uint64_t k : {t.end[rebuilds[0]] - 1, t.end[rebuilds[0]], range.last}) {
    pm::CrashSimulator sim(kCrashRegionBytes);
    {
      Harness h(kEngine, kCrashRegionBytes, &sim);
      sim.crash_at(k);
      (void)run_ops(h, sim, ops);
    }
    ASSERT_TRUE(sim.crash_image().has_value());
    pm::reset_counters();
    Harness r(kEngine, *sim.crash_image());
    const pm::OpCounters rec =
        pm::totals().by_kind[static_cast<std::size_t>(pm::OpKind::kRecovery)];
    EXPECT_EQ(rec.lines_flushed + rec.fences, 0u);
    EXPECT_EQ(r.restart_problems() + r.check(), "") << "point " << k;
    // The array routes every key of every leaf to it, and keys in between to no entry.
    const TreeReport report = r.inspect();
    EXPECT_EQ(stat_of(r.engine(), "nodes_leaf"), std::to_string(report.nodes.size() - 1));
    for (const auto& [key, ref] : report.leaves) {
      ASSERT_EQ(r.engine().lookup(key), ref);
      ASSERT_EQ(r.engine().lookup(key + "+"), kNoItem);
    }
    EXPECT_EQ(stat_of(r.engine(), "inner_rebuilds"), "0");
  }
}

}  // namespace
}  // namespace pmcached::engine::testing

// How full the tree's pages end up under ascending, descending, nearly ascending and random
// loads: edge splits (separator.h) keep the pages behind an ascending or descending load
// kEdgeFill full; the middle split stays for everything else.
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/bptree/btree.h"
#include "engine/bptree/separator.h"
#include "tests/bptree/btree_harness.h"
#include "tests/bptree/page_fill.h"

namespace pmcached::engine::bptree {
namespace {

using testing::HarnessOptions;
using testing::mean;
using testing::TreeHarness;

constexpr std::size_t kPageSize = 4096;
constexpr double kEdgeFill = kEdgeFillTenths / 10.0;

// The keys of the benchmarks' load phase (bench/mc_load.cc).
std::string bench_key(int i) {
  char key[32];
  std::snprintf(key, sizeof key, "mykey_rand%012d", i);
  return key;
}

std::vector<std::vector<double>> level_fills(TreeHarness& h) {
  return testing::level_fills(h, kPageSize);
}

// Loads `ids` as bench keys with `value_size`-byte values; the tree must check.
void load(TreeHarness& h, const std::vector<int>& ids, std::size_t value_size = 100,
          const std::string& key_prefix = "") {
  const std::string value(value_size, 'v');
  for (const int i : ids) {
    ASSERT_EQ(h.put(key_prefix + bench_key(i), value), WriteStatus::kInserted) << i;
  }
  ASSERT_EQ(h.tree().check(), "");
  ASSERT_EQ(h.tree().size(), ids.size());
}

std::vector<int> ascending(int n) {
  std::vector<int> ids(static_cast<std::size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  return ids;
}

// Every page of every level but the one at the load's edge (the back for an ascending load, the
// front for a descending one) is kEdgeFill full, to within half an entry (the split point is the
// entry boundary nearest the target; entries here are at most 220 bytes, 5.4% of a page).
void expect_edge_fill_behind(const std::vector<std::vector<double>>& levels, bool edge_is_back) {
  for (std::size_t level = 0; level < levels.size(); ++level) {
    std::vector<double> behind = levels[level];
    if (behind.size() < 2) continue;
    behind.erase(edge_is_back ? behind.end() - 1 : behind.begin());
    const auto [least, most] = std::minmax_element(behind.begin(), behind.end());
    EXPECT_GE(*least, kEdgeFill - 0.03) << "level " << level << " of " << levels.size();
    // Not full: the room left takes keys that arrive late (NearlyAscending...).
    EXPECT_LE(*most, kEdgeFill + 0.03) << "level " << level << " of " << levels.size();
  }
}

HarnessOptions options() {
  HarnessOptions o;
  o.frames = 64;
  o.page_size = kPageSize;
  return o;
}

TEST(BTreeFillTest, AscendingInsertsLeaveTheLeavesBehindAtTheEdgeFill) {
  TreeHarness h(options());
  load(h, ascending(4000));
  const auto levels = level_fills(h);
  ASSERT_GE(levels.back().size(), 100u);
  expect_edge_fill_behind(levels, true);
  const BTreeStats stats = h.tree().stats();
  EXPECT_EQ(stats.edge_splits, stats.splits);
}

TEST(BTreeFillTest, AscendingLongKeysLeaveTheInnerPagesBehindAtTheEdgeFill) {
  TreeHarness h(options());
  // 190-byte keys and 1-byte values: about 18 separators to an inner page, two inner levels.
  load(h, ascending(3000), 1, std::string(178, 'p'));
  const auto levels = level_fills(h);
  ASSERT_GE(levels.size(), 3u);
  ASSERT_GE(levels[levels.size() - 2].size(), 5u);
  expect_edge_fill_behind(levels, true);
}

TEST(BTreeFillTest, DescendingInsertsLeaveTheLeavesBehindAtTheEdgeFill) {
  TreeHarness h(options());
  std::vector<int> ids = ascending(4000);
  std::reverse(ids.begin(), ids.end());
  load(h, ids);
  const auto levels = level_fills(h);
  ASSERT_GE(levels.back().size(), 100u);
  expect_edge_fill_behind(levels, false);
}

// A load over a few connections: ascending, but requests in flight together arrive in any order.
TEST(BTreeFillTest, NearlyAscendingInsertsStillFillTheLeavesBehind) {
  TreeHarness h(options());
  // Key i arrives as if sent at i + a delay of up to 4 requests.
  std::vector<std::pair<int, int>> arrivals;
  std::mt19937 rng(11);
  for (int i = 0; i < 4000; ++i) arrivals.emplace_back(i + static_cast<int>(rng() % 5), i);
  std::sort(arrivals.begin(), arrivals.end());
  std::vector<int> ids;
  for (const auto& [at, i] : arrivals) ids.push_back(i);
  ASSERT_FALSE(std::is_sorted(ids.begin(), ids.end()));
  load(h, ids);
  const auto levels = level_fills(h);
  expect_edge_fill_behind(levels, true);
}

TEST(BTreeFillTest, RandomInsertsSplitInTheMiddle) {
  TreeHarness h(options());
  std::vector<int> ids = ascending(4000);
  std::shuffle(ids.begin(), ids.end(), std::mt19937(13));
  load(h, ids);
  const std::vector<double> leaves = level_fills(h).back();
  // Middle splits under random inserts: ln 2 full on average in the limit (Yao 1978); a tree
  // this small is still in the first waves of splits, a little above (0.787 before edge splits
  // existed, 0.782 with them).
  EXPECT_GT(mean(leaves), 0.65);
  EXPECT_LT(mean(leaves), 0.85);
  // Edge splits only at the two ends of a level, when the new key is in the outer half.
  const BTreeStats stats = h.tree().stats();
  EXPECT_LT(stats.edge_splits * 10, stats.splits);
}

}  // namespace
}  // namespace pmcached::engine::bptree

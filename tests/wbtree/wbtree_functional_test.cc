// wbtree-specific functional tests: splits of leaves and inner nodes and root growth with
// ascending, descending and random keys (node kinds, heights and split counters as the design
// predicts); deletes that unlink leaves and inner nodes and collapse the root; the flushes of each
// entry operation (three per insert with the bitmap, wbtree_node.h); running out of heap.
// Harness::check (the inspector, tests/wbtree/wbtree_inspect.h) runs after every scenario.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/pm/persistence.h"
#include "engine/wbtree/wbtree_node.h"
#include "tests/index/recovery_crash.h"
#include "tests/wbtree/wbtree_inspect.h"
#include "tests/wbtree/wbtree_shape.h"

namespace pmcached::engine::wbtree::testing {
namespace {

using ::pmcached::engine::testing::be64;
using ::pmcached::engine::testing::Model;
using ::pmcached::engine::testing::stat_number;

constexpr std::size_t kPoolBytes = 64u << 20;

class WbTreeTest : public ::testing::Test {
 protected:
  WbTreeTest() : h_(kEngine, kPoolBytes) {}

  void put_all(const std::vector<Op>& ops) {
    for (const Op& op : ops) ASSERT_EQ(h_.put(op.key, model_), UpsertStatus::kInserted);
  }
  void del_all(const std::vector<std::string>& keys) {
    for (const std::string& key : keys) ASSERT_TRUE(h_.del(key, model_)) << "missing key";
  }
  [[nodiscard]] Shape shape() { return shape_of(h_.region()); }
  [[nodiscard]] std::uint64_t stat_value(const std::string& name) {
    return stat_number(h_.engine(), name);
  }
  // Counter relations that hold in any tree built by inserts only, plus the stats' node counts.
  void expect_split_accounting() {
    const Shape s = shape();
    EXPECT_EQ(s.leaves, stat_value("leaf_splits") + 1);
    EXPECT_EQ(s.inners, stat_value("inner_splits") + stat_value("root_splits"));
    EXPECT_EQ(stat_value("nodes_leaf"), s.leaves);
    EXPECT_EQ(stat_value("nodes_inner"), s.inners);
    // One key block per inner entry but each inner node's first: leaves - 1 in any tree.
    EXPECT_EQ(stat_value("nodes_key"), s.leaves - 1);
  }
  void expect_consistent() {
    EXPECT_EQ(h_.contents(), model_);
    EXPECT_EQ(h_.check(), "");
    EXPECT_EQ(stat_value("nodes_key"), shape().leaves - 1);
  }

  Harness h_;
  Model model_;
};

TEST_F(WbTreeTest, FirstKeyMakesTheMetaBlockAndOneRootLeaf) {
  EXPECT_EQ(meta_of(h_.region()), 0u) << "no tree before the first key";
  put_all(ascending(7, 1));
  const Shape s = shape();
  EXPECT_TRUE(s.root_is_leaf);
  EXPECT_EQ(s.height, 1u);
  EXPECT_EQ(h_.inspect().nodes.size(), 2u);  // meta + root leaf
  expect_consistent();
}

TEST_F(WbTreeTest, FullRootLeafSplitsIntoANewInnerRoot) {
  put_all(ascending(1, kLeafFanout));
  EXPECT_TRUE(shape().root_is_leaf);
  EXPECT_EQ(stat_value("leaf_splits"), 0u);
  put_all(ascending(1000, 1));
  const Shape s = shape();
  EXPECT_FALSE(s.root_is_leaf);
  EXPECT_EQ(s.root_count, 2u);
  EXPECT_EQ(s.height, 2u);
  EXPECT_EQ(stat_value("leaf_splits"), 1u);
  EXPECT_EQ(stat_value("root_splits"), 1u);
  // The lower half stays, the upper half moves: 26 and 26 + the new key.
  const std::vector<std::uint64_t> children = children_of(h_.region(), tree_root(h_.region()));
  EXPECT_EQ(keys_under(h_.region(), children[0]).size(), kLeafFanout / 2);
  EXPECT_EQ(keys_under(h_.region(), children[1]).size(), kLeafFanout / 2 + 1);
  expect_split_accounting();
  expect_consistent();
}

// Ascending keys fill the rightmost leaf: 26 keys per split leaf, the root inner node fills at 54
// children and splits (27 + 27) into a new root: height 3; then the right inner node fills and
// splits below the root (an inner split that is not a root split).
TEST_F(WbTreeTest, AscendingKeysSplitInnerNodesAndGrowTheRoot) {
  std::uint64_t next = 1;
  while (stat_value("root_splits") < 2) {
    put_all(ascending(next++, 1));
    ASSERT_LT(next, 5000u);
  }
  EXPECT_EQ(stat_value("inner_splits"), 1u);
  EXPECT_EQ(shape().height, 3u);
  EXPECT_EQ(shape().root_count, 2u);
  const std::vector<std::uint64_t> halves = children_of(h_.region(), tree_root(h_.region()));
  EXPECT_EQ(children_of(h_.region(), halves[0]).size(), kInnerFanout / 2);
  while (stat_value("inner_splits") < 2) {
    put_all(ascending(next++, 1));
    ASSERT_LT(next, 5000u);
  }
  EXPECT_EQ(stat_value("root_splits"), 2u);
  EXPECT_EQ(shape().height, 3u);
  EXPECT_EQ(shape().root_count, 3u);
  expect_split_accounting();
  expect_consistent();
}

TEST_F(WbTreeTest, DescendingKeysSplitTheLeftmostNodes) {
  put_all(ascending(100000, 3000, -1));
  const Shape s = shape();
  EXPECT_EQ(s.height, 3u);
  EXPECT_GE(stat_value("inner_splits"), 2u);
  // Descending keys fill the leftmost leaf; each split leaves a full upper half: every leaf but
  // the first has 26 keys.
  const std::uint64_t last_inner = children_of(h_.region(), tree_root(h_.region())).back();
  const std::vector<std::uint64_t> leaves = children_of(h_.region(), last_inner);
  EXPECT_EQ(keys_under(h_.region(), leaves.back()).size(), kLeafFanout / 2);
  expect_split_accounting();
  expect_consistent();
}

TEST_F(WbTreeTest, RandomKeysKeepEveryInvariant) {
  std::mt19937_64 rng(5);
  for (int i = 0; i < 20000; ++i) {
    ASSERT_NE(h_.put(be64(rng() % 1000000), model_), UpsertStatus::kOutOfMemory);
  }
  EXPECT_EQ(shape().height, 3u);
  expect_split_accounting();
  expect_consistent();
  for (const std::string& from : {std::string(""), be64(500000), be64(999999)}) {
    std::vector<std::string> scanned;
    h_.engine().scan(from, [&](std::string_view key, ItemRef) {
      scanned.emplace_back(key);
      return scanned.size() < 100;
    });
    std::vector<std::string> expected;
    for (auto it = model_.lower_bound(from); it != model_.end() && expected.size() < 100; ++it) {
      expected.push_back(it->first);
    }
    EXPECT_EQ(scanned, expected);
  }
}

TEST_F(WbTreeTest, EmptyingALeafUnlinksItAndCollapsesTheRoot) {
  put_all(ascending(1, kLeafFanout + 1));
  ASSERT_EQ(shape().height, 2u);
  const std::vector<std::uint64_t> leaves = children_of(h_.region(), tree_root(h_.region()));
  const std::uint64_t right = leaves[1];
  del_all(keys_under(h_.region(), leaves[0]));
  // The left leaf went with its last key; the root had one child left and was collapsed.
  const Shape s = shape();
  EXPECT_TRUE(s.root_is_leaf);
  EXPECT_EQ(tree_root(h_.region()), right);
  EXPECT_EQ(s.height, 1u);
  expect_consistent();
  del_all(keys_under(h_.region(), right));
  EXPECT_TRUE(shape().root_is_leaf);
  EXPECT_EQ(shape().root_count, 0u);
  EXPECT_EQ(h_.inspect().nodes.size(), 2u) << "an emptied tree is the meta block and one leaf";
  expect_consistent();
  put_all(ascending(5, 3));
  expect_consistent();
}

TEST_F(WbTreeTest, UnlinkingAFirstChildMakesTheNextEntryKeyless) {
  put_all(ascending(1, 200));
  ASSERT_EQ(shape().height, 2u);
  const std::vector<std::uint64_t> leaves = children_of(h_.region(), tree_root(h_.region()));
  ASSERT_GE(leaves.size(), 3u);
  const std::uint64_t keys_before = stat_value("nodes_key");
  del_all(keys_under(h_.region(), leaves[0]));
  EXPECT_EQ(shape().leaves, leaves.size() - 1);
  EXPECT_EQ(stat_value("nodes_key"), keys_before - 1);  // the new first entry's key block freed
  expect_consistent();  // the inspector checks the first entry is keyless
  // Keys below the old separator go to the (now keyless) first child again.
  put_all(ascending(0, 1));
  expect_consistent();
}

// Ascending keys to height 3 with a root of two inner nodes; deleting everything under the left
// one unlinks its leaves one by one, then — with its last key — the inner node itself (a cascade:
// leaf and inner node both have one entry), and the root, left with one child, collapses.
TEST_F(WbTreeTest, UnlinkCascadeRemovesAnInnerNodeAndCollapsesTheRoot) {
  std::uint64_t next = 1;
  while (stat_value("root_splits") < 2) put_all(ascending(next++, 1));
  ASSERT_EQ(shape().root_count, 2u);
  const std::vector<std::uint64_t> halves = children_of(h_.region(), tree_root(h_.region()));
  const std::vector<std::string> left_keys = keys_under(h_.region(), halves[0]);
  del_all(std::vector<std::string>(left_keys.begin(), left_keys.end() - 1));
  EXPECT_EQ(children_of(h_.region(), halves[0]).size(), 1u);
  EXPECT_EQ(shape().height, 3u);
  expect_consistent();
  del_all({left_keys.back()});
  EXPECT_EQ(tree_root(h_.region()), halves[1]);
  EXPECT_EQ(shape().height, 2u);
  expect_consistent();
  // Everything else: back to one empty root leaf.
  std::vector<std::string> rest;
  for (const auto& entry : model_) rest.push_back(entry.first);
  std::shuffle(rest.begin(), rest.end(), std::mt19937_64(3));
  del_all(rest);
  EXPECT_TRUE(shape().root_is_leaf);
  EXPECT_EQ(h_.inspect().nodes.size(), 2u);
  expect_consistent();
}

TEST_F(WbTreeTest, MixedRandomWorkloadKeepsEveryInvariant) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 30000; ++i) {
    const std::string key = be64(rng() % 3000);
    if (rng() % 3 == 0) {
      (void)h_.del(key, model_);
    } else {
      ASSERT_NE(h_.put(key, model_), UpsertStatus::kOutOfMemory);
    }
    if (i % 5000 == 0) expect_consistent();
  }
  expect_consistent();
}

// Flushed lines per operation (seed 002 §2.2, wbtree_node.h): an insert into a leaf with room
// writes the entry and the slot array, then commits the bitmap — 3 lines, 2 fences (seed 002's
// protocol also cleared bit 0 first: 4 lines); a replace is one 8-byte store; a delete 3.
TEST_F(WbTreeTest, EntryOperationsFlushWhatTheProtocolSays) {
  put_all(ascending(1, 10));
  auto counters = [](pm::OpKind kind) {
    return pm::totals().by_kind[static_cast<std::size_t>(kind)];
  };
  const pm::OpCounters insert0 = counters(pm::OpKind::kInsert);
  put_all(ascending(20, 1));
  const pm::OpCounters insert1 = counters(pm::OpKind::kInsert);
  EXPECT_EQ(insert1.lines_flushed - insert0.lines_flushed, 3u);
  EXPECT_EQ(insert1.fences - insert0.fences, 2u);
  ASSERT_EQ(h_.put(be64(3), model_), UpsertStatus::kReplaced);
  const pm::OpCounters update = counters(pm::OpKind::kUpdate);
  ASSERT_EQ(h_.put(be64(4), model_), UpsertStatus::kReplaced);
  EXPECT_EQ(counters(pm::OpKind::kUpdate).lines_flushed - update.lines_flushed, 1u);
  const pm::OpCounters del0 = counters(pm::OpKind::kDelete);
  del_all({be64(5)});
  EXPECT_EQ(counters(pm::OpKind::kDelete).lines_flushed - del0.lines_flushed, 3u);
  expect_consistent();
}

// Fill a small pool until the heap is full: every failed put (item or node allocation) leaves the
// tree as it was, and the tree keeps working after some deletes.
TEST(WbTreeOutOfMemory, AFullHeapChangesNothing) {
  Harness h(kEngine, pm::kMinPoolSize);
  Model model;
  int failures = 0;
  for (std::uint64_t i = 0; failures < 20 && i < 200000; ++i) {
    std::string key(200, 'k');
    key += be64(i * 7919 % 100003);
    if (h.put(key, model) == UpsertStatus::kOutOfMemory) ++failures;
  }
  ASSERT_EQ(failures, 20);
  EXPECT_EQ(h.contents(), model);
  EXPECT_EQ(h.check(), "");
  std::vector<std::string> keys;
  for (const auto& entry : model) keys.push_back(entry.first);
  for (std::size_t i = 0; i < keys.size(); i += 2) ASSERT_TRUE(h.del(keys[i], model));
  EXPECT_EQ(h.contents(), model);
  EXPECT_EQ(h.check(), "");
}

}  // namespace
}  // namespace pmcached::engine::wbtree::testing

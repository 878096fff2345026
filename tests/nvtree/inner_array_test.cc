// The NV-Tree's DRAM inner array on its own (engine/nvtree/inner_array.h): routing after builds of
// every height, inserts into a PLN until it overflows and the whole array is rebuilt, removals
// until a PLN empties, predecessors across PLNs, and the (bound, leaf) list surviving all of it.
#include "engine/nvtree/inner_array.h"

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/index/index_harness.h"

namespace pmcached::engine::nvtree {
namespace {

using engine::testing::be64;

// Leaf i (offset 1000 + i) holds the keys [be64(10 i), be64(10 i + 10)).
std::vector<InnerArray::Entry> leaves(std::uint64_t n) {
  std::vector<InnerArray::Entry> list;
  for (std::uint64_t i = 0; i < n; ++i) list.push_back({i == 0 ? "" : be64(10 * i), 1000 + i});
  return list;
}

// A key in the range of the leaf with `bound`: the bound itself, or (`above`) a key just above it.
std::string probe(const std::string& bound, bool above) {
  if (bound.empty()) return above ? std::string(7, '\0') + "\x05" : std::string(1, '\0');
  return above ? bound + std::string(1, '\0') : bound;
}

// Every key of every leaf's range, and the gaps, route to the right leaf; predecessors chain.
void expect_routes(const InnerArray& a, const std::vector<InnerArray::Entry>& list) {
  ASSERT_EQ(a.leaf_count(), list.size());
  std::uint64_t before = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    for (const std::string& key : {probe(list[i].bound, false), probe(list[i].bound, true)}) {
      const InnerArray::Position p = a.locate(key);
      ASSERT_EQ(a.leaf(p), list[i].leaf) << "leaf " << i;
      ASSERT_EQ(a.predecessor(p), before) << "leaf " << i;
    }
    before = list[i].leaf;
  }
  const std::vector<InnerArray::Entry> got = a.entries();
  ASSERT_EQ(got.size(), list.size());
  for (std::size_t i = 1; i < got.size(); ++i) {
    EXPECT_EQ(got[i].bound, list[i].bound);
    EXPECT_EQ(got[i].leaf, list[i].leaf);
  }
}

TEST(InnerArrayTest, BuildsLevelsOfHalfFilledPlnsAndRoutesEveryKey) {
  InnerArray a;
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.levels(), 0u);
  // One PLN; two levels (PLNs under a root IN); three levels.
  const std::uint64_t one_level = InnerArray::kPlnFill;
  const std::uint64_t two_levels = InnerArray::kPlnFill * InnerArray::kSlots;
  for (const auto& [n, levels] : std::vector<std::pair<std::uint64_t, std::size_t>>{
           {1, 1}, {one_level, 1}, {one_level + 1, 2}, {two_levels, 2}, {two_levels + 1, 3}}) {
    a.build(leaves(n));
    EXPECT_EQ(a.levels(), levels) << n << " leaves";
    EXPECT_GT(a.bytes(), 0u);
    expect_routes(a, leaves(n));
  }
  a.build({});
  EXPECT_TRUE(a.empty());
}

TEST(InnerArrayTest, AFullPlnRebuildsTheWholeArrayOnce) {
  InnerArray a;
  std::vector<InnerArray::Entry> list = leaves(3 * InnerArray::kPlnFill);  // three full-ish PLNs
  a.build(list);
  const std::size_t nodes = a.node_count();
  // Split the last leaf of the first PLN over and over: room for kSlots - kPlnFill more leaves.
  int rebuilds = 0;
  std::uint64_t next_leaf = 5000;
  for (unsigned i = 0; i < InnerArray::kSlots - InnerArray::kPlnFill + 1; ++i) {
    const std::size_t at = InnerArray::kPlnFill - 1 + i;  // the newest leaf of PLN 0
    const std::string bound = list[at].bound + std::string(1, static_cast<char>('a' + i));
    const InnerArray::Position p = a.locate(list[at].bound);
    ASSERT_EQ(a.leaf(p), list[at].leaf);
    const bool rebuilt = a.insert_after(p, bound, next_leaf);
    list.insert(list.begin() + static_cast<std::ptrdiff_t>(at) + 1, {bound, next_leaf++});
    rebuilds += rebuilt ? 1 : 0;
    EXPECT_EQ(rebuilt, i == InnerArray::kSlots - InnerArray::kPlnFill) << "insert " << i;
    expect_routes(a, list);
  }
  EXPECT_EQ(rebuilds, 1);
  EXPECT_GT(a.node_count(), nodes);  // the rebuild spread the leaves over more PLNs
}

TEST(InnerArrayTest, RemovalsKeepRangesAndAnEmptiedPlnRebuilds) {
  InnerArray a;
  std::vector<InnerArray::Entry> list = leaves(2 * InnerArray::kPlnFill);  // PLNs of 16 and 16
  a.build(list);
  // Remove the first leaf of PLN 1 (its range goes to the next leaf of that PLN), then the rest.
  int rebuilds = 0;
  while (list.size() > InnerArray::kPlnFill) {
    const std::size_t at = InnerArray::kPlnFill;
    const InnerArray::Position p = a.locate(list[at].bound);
    ASSERT_EQ(p.slot, 0u);
    const bool rebuilt = a.remove(p);
    rebuilds += rebuilt ? 1 : 0;
    EXPECT_EQ(rebuilt, list.size() == InnerArray::kPlnFill + 1);
    // The removed leaf's keys now route to a neighbour: drop it and keep its bound for the next
    // leaf while that stays in the same PLN (as the PLN does).
    if (!rebuilt && at + 1 < list.size()) list[at + 1].bound = list[at].bound;
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(at));
    for (std::size_t i = 0; i < list.size(); ++i) {
      ASSERT_EQ(a.leaf(a.locate(probe(list[i].bound, true))), list[i].leaf);
    }
  }
  EXPECT_EQ(rebuilds, 1);
  EXPECT_EQ(a.levels(), 1u);
  // Down to nothing, from the front.
  while (!list.empty()) {
    ASSERT_EQ(a.leaf(a.locate("")), list.front().leaf);
    EXPECT_EQ(a.predecessor(a.locate("")), 0u);
    (void)a.remove(a.locate(""));
    list.erase(list.begin());
    ASSERT_EQ(a.leaf_count(), list.size());
  }
  EXPECT_TRUE(a.empty());
}

}  // namespace
}  // namespace pmcached::engine::nvtree

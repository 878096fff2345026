// InnerTree (engine/fptree/inner_tree.h), FPTree's volatile inner nodes, on its own: routing
// after bulk builds, splits at every level and erasures, against a model of the leaf ranges.
#include "engine/fptree/inner_tree.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <random>
#include <string>

#include <gtest/gtest.h>

namespace pmcached::engine::fptree {
namespace {

std::string key_of(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 7; i >= 0; --i, v >>= 8) s[static_cast<std::size_t>(i)] = static_cast<char>(v);
  return s;
}

// The leaf ranges as a sorted map bound -> leaf: the first leaf takes every smaller key too.
class RangeModel {
 public:
  std::uint64_t find(const std::string& key) const {
    auto it = ranges_.upper_bound(key);
    if (it == ranges_.begin()) return ranges_.empty() ? 0 : it->second;
    return std::prev(it)->second;
  }
  std::uint64_t previous(const std::string& key) const {
    auto it = ranges_.upper_bound(key);
    if (it == ranges_.begin()) return 0;
    --it;
    return it == ranges_.begin() ? 0 : std::prev(it)->second;
  }
  std::map<std::string, std::uint64_t> ranges_;
};

void expect_routes_like(const InnerTree& tree, const RangeModel& model, std::mt19937_64& rng) {
  ASSERT_EQ(tree.leaves(), model.ranges_.size());
  for (const auto& [bound, leaf] : model.ranges_) {
    ASSERT_EQ(tree.find(bound), leaf);
    ASSERT_EQ(tree.previous(bound), model.previous(bound));
  }
  for (int i = 0; i < 2000; ++i) {
    const std::string k = key_of(rng() % 2000000);
    ASSERT_EQ(tree.find(k), model.find(k)) << i;
    ASSERT_EQ(tree.previous(k), model.previous(k)) << i;
  }
}

TEST(InnerTreeTest, EmptyTreeRoutesNowhere) {
  InnerTree tree;
  EXPECT_EQ(tree.find("a"), 0u);
  EXPECT_EQ(tree.previous("a"), 0u);
  EXPECT_EQ(tree.height(), 0u);
  tree.build({});
  EXPECT_EQ(tree.find(""), 0u);
}

TEST(InnerTreeTest, BuildThenSplitsGrowTheTreeAndRouteEveryKey) {
  std::mt19937_64 rng(1);
  RangeModel model;
  std::vector<std::pair<std::string, std::uint64_t>> leaves;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    leaves.emplace_back(key_of(i * 1000), 64 * (i + 1));
    model.ranges_[key_of(i * 1000)] = 64 * (i + 1);
  }
  InnerTree tree;
  tree.build(leaves);
  EXPECT_EQ(tree.height(), 2u);  // 1000 leaves in nodes of 192: 6 bottom nodes and a root
  expect_routes_like(tree, model, rng);
  // Splits: new bounds inside existing ranges, until the tree grows a level.
  std::uint64_t next_leaf = 1000000;
  while (tree.height() < 3) {
    const std::string bound = key_of(rng() % 1000000 + 1);
    if (model.ranges_.count(bound) != 0) continue;
    tree.insert(bound, next_leaf);
    model.ranges_[bound] = next_leaf++;
  }
  EXPECT_GT(tree.leaves(), InnerTree::kFanout * InnerTree::kFanout / 2);
  expect_routes_like(tree, model, rng);
}

TEST(InnerTreeTest, ErasingLeavesGivesTheirRangesToANeighbourAndShrinksTheTree) {
  std::mt19937_64 rng(2);
  InnerTree tree;
  RangeModel model;
  std::vector<std::pair<std::string, std::uint64_t>> leaves;
  for (std::uint64_t i = 0; i < 600; ++i) {
    leaves.emplace_back(key_of(i * 1000), 64 * (i + 1));
    model.ranges_[key_of(i * 1000)] = 64 * (i + 1);
  }
  tree.build(leaves);
  std::vector<std::string> bounds;
  for (const auto& [bound, leaf] : model.ranges_) bounds.push_back(bound);
  std::shuffle(bounds.begin(), bounds.end(), rng);
  for (std::size_t i = 0; i + 1 < bounds.size(); ++i) {
    const std::uint64_t leaf = model.ranges_.at(bounds[i]);
    ASSERT_EQ(tree.find(bounds[i]), leaf);
    tree.erase(bounds[i]);
    model.ranges_.erase(bounds[i]);
    // The erased leaf is gone; every remaining leaf still owns its own bound.
    if (i % 97 == 0) {
      for (const auto& [bound, l] : model.ranges_) ASSERT_EQ(tree.find(bound), l);
    }
    ASSERT_NE(tree.find(bounds[i]), leaf);
  }
  EXPECT_EQ(tree.leaves(), 1u);
  EXPECT_EQ(tree.height(), 1u);
  EXPECT_EQ(tree.find(""), model.ranges_.begin()->second);
  tree.erase("");
  EXPECT_EQ(tree.leaves(), 0u);
  EXPECT_EQ(tree.find(""), 0u);
}

}  // namespace
}  // namespace pmcached::engine::fptree

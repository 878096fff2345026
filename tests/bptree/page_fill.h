// How full a tree's pages are, level by level, for the page-fill tests. Quiescent tree only.
#pragma once

#include <numeric>
#include <vector>

#include "engine/bptree/btree.h"
#include "engine/bptree/node.h"
#include "tests/bptree/btree_harness.h"

namespace pmcached::engine::bptree::testing {

// Each level's pages in key order, top down, as the share of the node's capacity they use.
inline std::vector<std::vector<double>> level_fills(TreeHarness& h, std::size_t page_size) {
  std::vector<std::vector<double>> levels;
  std::vector<PageId> pages = {h.tree().root()};
  while (!pages.empty()) {
    std::vector<PageId> below;
    std::vector<double>& fills = levels.emplace_back();
    for (const PageId id : pages) {
      const buffer::PageGuard page = h.buffers().fix(id, buffer::LatchMode::kShared);
      const Node node(page.data(), page_size);
      fills.push_back(static_cast<double>(node.used()) / node_capacity(page_size));
      if (!node.is_inner()) continue;
      for (std::size_t i = 0; i <= node.count(); ++i) {
        below.push_back(
            h.buffers().child_id(load_value<std::uint64_t>(page.data() + node.child_offset(i))));
      }
    }
    pages = std::move(below);
  }
  return levels;
}

inline double mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

}  // namespace pmcached::engine::bptree::testing

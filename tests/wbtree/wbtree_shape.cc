// Shape helpers for the wbtree tests. See wbtree_shape.h.
#include "tests/wbtree/wbtree_shape.h"

#include "engine/btree/btree_engine.h"
#include "engine/btree/key_tag.h"
#include "engine/wbtree/wbtree_node.h"

namespace pmcached::engine::wbtree::testing {

std::uint64_t meta_of(const pm::PmRegion& region) {
  return *region.at<std::uint64_t>(64);  // superblock line 1, word 0: the root field
}

std::uint64_t tree_root(const pm::PmRegion& region) {
  const std::uint64_t meta = meta_of(region);
  return meta == 0 ? 0 : region.at<btree::Meta>(meta)->root;
}

std::vector<std::uint64_t> children_of(const pm::PmRegion& region, std::uint64_t node) {
  const auto* n = region.at<Inner>(node);
  std::vector<std::uint64_t> out;
  for (unsigned pos = 0; pos < n->header.count; ++pos) {
    out.push_back(n->entries[n->header.order[pos]].child);
  }
  return out;
}

Shape shape_of(const pm::PmRegion& region) {
  Shape s;
  const std::uint64_t root = tree_root(region);
  if (root == 0) return s;
  s.root_is_leaf = region.at<NodeHeader>(root)->kind == kLeafKind;
  s.root_count = region.at<NodeHeader>(root)->count;
  std::vector<std::pair<std::uint64_t, std::size_t>> stack = {{root, 1}};
  while (!stack.empty()) {
    const auto [node, depth] = stack.back();
    stack.pop_back();
    if (region.at<NodeHeader>(node)->kind == kLeafKind) {
      ++s.leaves;
      s.height = depth;
      continue;
    }
    ++s.inners;
    for (std::uint64_t child : children_of(region, node)) stack.emplace_back(child, depth + 1);
  }
  return s;
}

std::vector<std::string> keys_under(const pm::PmRegion& region, std::uint64_t node) {
  std::vector<std::string> out;
  const auto* h = region.at<NodeHeader>(node);
  if (h->kind != kLeafKind) {
    for (std::uint64_t child : children_of(region, node)) {
      for (std::string& key : keys_under(region, child)) out.push_back(std::move(key));
    }
    return out;
  }
  for (unsigned pos = 0; pos < h->count; ++pos) {
    const ItemRef ref = btree::ref_of(region.at<Leaf>(node)->entries[h->order[pos]]);
    out.emplace_back(::pmcached::engine::testing::item_key(region, ref));
  }
  return out;
}

InvalidNodes invalid_nodes(const pm::PmRegion& region) {
  InvalidNodes out;
  std::vector<std::uint64_t> stack;
  if (tree_root(region) != 0) stack.push_back(tree_root(region));
  while (!stack.empty()) {
    const std::uint64_t node = stack.back();
    stack.pop_back();
    const auto* h = region.at<NodeHeader>(node);
    const std::uint64_t entries = h->bitmap & entry_mask(h->kind);
    std::uint64_t listed = 0;
    bool repeats = false;
    for (unsigned pos = 0; pos < h->count && pos < fanout_of(h->kind); ++pos) {
      repeats = repeats || (listed & entry_bit(h->order[pos])) != 0;
      listed |= entry_bit(h->order[pos]);
    }
    const bool bit0 = (h->bitmap & kValidBit) != 0;
    const bool invalid = !bit0 || repeats || listed != entries || h->count > fanout_of(h->kind);
    out.with_bit0_set += invalid && bit0 ? 1 : 0;
    if (h->kind == kLeafKind) {
      out.leaves += invalid ? 1 : 0;
      continue;
    }
    out.inners += invalid ? 1 : 0;
    // Follow the bitmap (the truth while bit 0 is clear), not order[].
    const auto* n = region.at<Inner>(node);
    for (unsigned e = 0; e < kInnerFanout; ++e) {
      if ((h->bitmap & entry_bit(e)) != 0) stack.push_back(n->entries[e].child);
    }
  }
  return out;
}

std::vector<Op> ascending(std::uint64_t first, std::uint64_t count, std::int64_t step) {
  std::vector<Op> ops;
  for (std::uint64_t i = 0; i < count; ++i) {
    const auto offset = static_cast<std::uint64_t>(static_cast<std::int64_t>(i) * step);
    ops.push_back({true, ::pmcached::engine::testing::be64(first + offset)});
  }
  return ops;
}

}  // namespace pmcached::engine::wbtree::testing

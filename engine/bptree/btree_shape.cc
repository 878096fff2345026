// BTree::tree_shapes(): the embedded trees of a b2tree's pages, for `stats engine` and the
// benchmark's per-page figures.
#include <algorithm>

#include "engine/b2tree/embedded_tree.h"
#include "engine/bptree/btree.h"

namespace pmcached::engine::bptree {
namespace {

void visit(BufferManager& buffers, const PageGuard& page, std::size_t page_size,
           BTree::TreeShapes& out) {
  const Node node(page.data(), page_size);
  ++out.pages;
  out.bytes += node.tree_bytes();
  out.max_bytes = std::max(out.max_bytes, node.tree_bytes());
  if (!node.tree().empty()) out.ranges += b2tree::shape(node.tree()).ranges;
  if (!node.is_inner()) return;
  for (std::size_t i = 0; i <= node.count(); ++i) {
    const PageId child =
        buffers.child_id(load_value<std::uint64_t>(page.data() + node.child_offset(i)));
    // Coupling: the child is latched before this page is let go (by the caller's return).
    visit(buffers, buffers.fix(child, LatchMode::kShared), page_size, out);
  }
}

}  // namespace

BTree::TreeShapes BTree::tree_shapes() const {
  TreeShapes out;
  visit(buffers_, fix_root(LatchMode::kShared, LatchMode::kShared), page_size_, out);
  return out;
}

}  // namespace pmcached::engine::bptree

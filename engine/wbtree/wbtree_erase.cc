// WbTreeEngine::erase: delete a leaf entry (the entry protocol, wbtree_entry.cc), or unlink a
// non-root leaf whose last key goes, with the chain of one-entry ancestors above it.
//
// Unlink: on the path root = n0, n1, ..., nd = leaf, let A = n_i be the highest node (i >= 1) such
// that n_i..n_d each have exactly one entry; n_(i-1) has at least two (the root, if it is inner,
// always has two or more). A's entry is deleted from n_(i-1) with the entry protocol — that one
// committed store removes the key. If it was n_(i-1)'s first entry, the new first entry's key
// block is cleared with one store (the first entry of an inner node is keyless) and freed.
// Then A..leaf and the removed entry's key block are freed, and while the root is an inner node
// with one child, that child becomes the root (store_u64_persist of meta.root), the old root freed.
// A crash after the unlink commit leaves at most a keyed first entry and a one-child root, which
// recovery repairs the same way (without freeing: the allocator rebuild frees what is unreachable).
#include <mutex>
#include <vector>

#include "engine/pm/persistence.h"
#include "engine/wbtree/wbtree_engine.h"

namespace pmcached::engine::wbtree {

ItemRef WbTreeEngine::erase(std::string_view key) noexcept {
  pm::OpScope scope(pm::OpKind::kDelete);
  std::unique_lock lock(mutex_);
  if (root() == 0) return kNoItem;
  std::vector<Step> path;
  const std::uint64_t node = find_leaf(key, &path);
  const unsigned entry = find_entry(node, key, btree::key_tag(key));
  if (entry == kLeafFanout) return kNoItem;
  const ItemRef previous = ref_at(node, entry);
  if (header(node)->count > 1 || path.empty()) {
    erase_entry(node, position_of(node, entry));
  } else {
    unlink(path, node);
  }
  keys_.fetch_sub(1, std::memory_order_relaxed);
  return previous;
}

// By position, one at a time (an unlink reshapes the tree): each entry is found by a walk that
// reads no key, then removed as erase() removes it. The inner nodes' separators are key blocks of
// their own, so no routing was derived from a damaged key.
std::vector<ItemRef> WbTreeEngine::drop_corrupt(const std::vector<ItemRef>& corrupt) {
  pm::OpScope scope(pm::OpKind::kRecovery);
  std::unique_lock lock(mutex_);
  std::vector<ItemRef> removed;
  for (ItemRef ref : corrupt) {
    if (root() == 0) break;
    std::vector<Step> path;
    unsigned entry = 0;
    const std::uint64_t node = find_ref(root(), ref, path, entry);
    if (node == 0) continue;
    if (header(node)->count > 1 || path.empty()) {
      erase_entry(node, position_of(node, entry));
    } else {
      unlink(path, node);
    }
    keys_.fetch_sub(1, std::memory_order_relaxed);
    removed.push_back(ref);
  }
  return removed;
}

std::uint64_t WbTreeEngine::find_ref(std::uint64_t node, ItemRef ref, std::vector<Step>& path,
                                     unsigned& entry) const noexcept {
  const NodeHeader* h = header(node);
  if (is_leaf(node)) {
    for (unsigned pos = 0; pos < h->count; ++pos) {
      if (ref_at(node, h->order[pos]) != ref) continue;
      entry = h->order[pos];
      return node;
    }
    return 0;
  }
  for (unsigned pos = 0; pos < h->count; ++pos) {
    path.push_back({node, pos});
    if (const std::uint64_t found = find_ref(child_at(node, pos), ref, path, entry)) return found;
    path.pop_back();
  }
  return 0;
}

void WbTreeEngine::unlink(const std::vector<Step>& path, std::uint64_t leaf_node) noexcept {
  // path[j] = n_j with the position of n_(j+1) in it; the leaf is n_d, d = path.size().
  std::size_t top = path.size();  // index of A on the path (n_top)
  while (top > 1 && header(path[top - 1].node)->count == 1) --top;
  const Step& above = path[top - 1];
  const std::uint64_t removed_key =
      inner(above.node)->entries[header(above.node)->order[above.pos]].key_block;
  erase_entry(above.node, above.pos);  // the commit
  std::uint64_t dropped_key = 0;
  if (above.pos == 0) dropped_key = clear_first_key(above.node);
  for (std::size_t j = top; j < path.size(); ++j) free_node(path[j].node);
  free_node(leaf_node);
  if (removed_key != 0) allocator_->free(removed_key);
  if (dropped_key != 0) allocator_->free(dropped_key);
  collapse_root(/*free=*/true);
}

void WbTreeEngine::collapse_root(bool free) noexcept {
  Meta* m = meta();
  while (!is_leaf(m->root) && header(m->root)->count == 1) {
    const std::uint64_t old_root = m->root;
    region_->store_u64_persist(&m->root, child_at(old_root, 0));
    if (free) free_node(old_root);
  }
}

}  // namespace pmcached::engine::wbtree

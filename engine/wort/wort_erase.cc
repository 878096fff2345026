// WortEngine::erase: clear the slot, or delete and collapse a node in one store.
//
// Why the collapse order is safe. Node N (depth d, reached through parent slot S) holds the leaf
// being erased and exactly one other reference R at position b = branch(N). Instead of clearing
// the leaf's slot and then collapsing, erase stores R into S (one store_u64_persist): that single
// 8-byte store both deletes the key and removes N. Crash states:
//   before S is persisted    the old tree, untouched (N still holds the key and R);
//   after S, R a leaf        the final tree;
//   after S, R a node C      C sits at path depth d while its header still says depth b + 1 with
//                            the old short prefix: a depth ahead of its path, the same state a
//                            crash inside Algorithm 1 leaves. Readers navigate it correctly
//                            (positions are absolute, skipped nibbles are checked at the leaf);
//                            Algorithm 2 at depth d rebuilds exactly the merged header, because
//                            two leaves from different children of C share [0, branch(C)) and
//                            differ (or one ends) at branch(C);
//   after C's header store   the final tree (merged depth d, prefix branch(C) - d).
// C's header is written only after S is persisted, so even an early eviction cannot persist it
// while S still points to N. N is freed after both stores, when nothing reachable refers to it.
#include <mutex>

#include "engine/pm/persistence.h"
#include "engine/radix/radix_tree.h"
#include "engine/wort/wort_engine.h"
#include "engine/wort/wort_factory.h"

namespace pmcached::engine::wort {

ItemRef WortEngine::erase(std::string_view key) noexcept { return erase_matching(key, kNoItem); }

ItemRef WortEngine::erase_routed(std::string_view route, ItemRef expected) noexcept {
  return erase_matching(route, expected);
}

// Erases the leaf `key` leads to if its key is `key` (expected == kNoItem) or its item is
// `expected` (recovery's drop of a record whose key may be damaged).
ItemRef WortEngine::erase_matching(std::string_view key, ItemRef expected) noexcept {
  pm::OpScope scope(pm::OpKind::kDelete);
  std::unique_lock lock(mutex_);
  const std::size_t key_chunks = Key::count(key);
  std::uint64_t* parent_slot = root_field_;
  std::uint64_t offset = root();
  std::uint32_t depth = 0;
  while (offset != 0) {
    Node* n = node(offset);
    const Header h = radix::checked_header(nodes_, offset, depth);
    if (key_chunks < h.branch() || !h.stored_prefix_matches(key)) return kNoItem;
    std::uint64_t* slot = slot_for(n, h.branch(), key_chunks,
                                   key_chunks == h.branch() ? 0 : Key::at(key, h.branch()));
    const std::uint64_t child = *slot;
    if (child == 0) return kNoItem;
    if (is_leaf(child)) {
      if (expected == kNoItem ? leaf_key(child) != key : leaf_item(child) != expected) {
        return kNoItem;
      }
      remove_leaf(parent_slot, offset, slot);
      count_keys(-1);
      return leaf_item(child);
    }
    parent_slot = slot;
    offset = child;
    depth = h.branch() + 1;
  }
  return kNoItem;
}

// Removes the leaf in `slot` of the node at `offset`, which hangs from `parent_slot`.
void WortEngine::remove_leaf(std::uint64_t* parent_slot, std::uint64_t offset,
                             std::uint64_t* slot) noexcept {
  Node* n = node(offset);
  unsigned others = 0;
  std::uint64_t other = 0;
  auto count = [&](std::uint64_t* s) {
    if (s != slot && *s != 0) {
      ++others;
      other = *s;
    }
  };
  count(&n->end_slot);
  for (std::uint64_t& child : n->children) count(&child);

  if (offset == root()) {
    if (others == 0) {  // the last key: the tree becomes empty
      region_->store_u64_persist(root_field_, 0);
      release_node(offset);
    } else {
      region_->store_u64_persist(slot, 0);
    }
    return;
  }
  if (others != 1) {  // >= 2 remain (0 cannot happen: a non-root node has >= 2 references)
    region_->store_u64_persist(slot, 0);
    return;
  }
  radix::collapse_in_place(nodes_, parent_slot, header_of(offset).depth, other);
  release_node(offset);
}

}  // namespace pmcached::engine::wort

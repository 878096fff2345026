// ArtEngine::erase: clear the END slot or remove a child (in place, or by a copy: artcow's N4
// and N16, and any node that falls below its type's minimum and moves to the smaller type);
// a non-root node left with one reference is replaced by it (collapse).
//
// If the heap cannot supply the copy, the removal falls back to the in-place commit (still one
// atomic store, so still failure-atomic): the node then keeps a larger type than it needs, or
// for artcow an unsorted N16, or an unmerged one-reference node — valid for readers and
// writers, only less compact. An erase never fails.
#include <mutex>

#include "engine/art/art_engine.h"
#include "engine/pm/persistence.h"
#include "engine/radix/radix_tree.h"

namespace pmcached::engine::art {
namespace {

[[nodiscard]] NodeType smaller(NodeType type) noexcept {
  return type == NodeType::kN256  ? NodeType::kN48
         : type == NodeType::kN48 ? NodeType::kN16
                                  : NodeType::kN4;
}

}  // namespace

ItemRef ArtEngine::erase(std::string_view key) noexcept { return erase_matching(key, kNoItem); }

ItemRef ArtEngine::erase_routed(std::string_view route, ItemRef expected) noexcept {
  return erase_matching(route, expected);
}

// Erases the leaf `key` leads to if its key is `key` (expected == kNoItem) or its item is
// `expected` (recovery's drop of a record whose key may be damaged).
ItemRef ArtEngine::erase_matching(std::string_view key, ItemRef expected) noexcept {
  pm::OpScope scope(pm::OpKind::kDelete);
  std::unique_lock lock(mutex_);
  std::uint64_t* parent_slot = root_field_;
  std::uint64_t node = root();
  std::uint32_t path = 0;
  while (node != 0) {
    const Header h = radix::checked_header(nodes_, node, path);
    if (key.size() < h.branch() || !h.stored_prefix_matches(key)) return kNoItem;
    std::uint64_t* slot = radix::slot_for_key(nodes_, node, h, key);
    const std::uint64_t child = slot == nullptr ? 0 : *slot;
    if (child == 0) return kNoItem;
    if (radix::is_leaf(child)) {
      if (expected == kNoItem ? nodes_.leaf_key(child) != key
                              : radix::leaf_item(child) != expected) {
        return kNoItem;
      }
      const bool at_end = key.size() == h.branch();
      remove(parent_slot, node, h, at_end, at_end ? 0 : Key::at(key, h.branch()));
      count_keys(-1);
      return radix::leaf_item(child);
    }
    parent_slot = slot;
    node = child;
    path = h.branch() + 1;
  }
  return kNoItem;
}

void ArtEngine::remove(std::uint64_t* parent_slot, std::uint64_t node, const Header& h, bool at_end,
                       unsigned chunk) noexcept {
  const std::uint64_t end = *nodes_.end_slot(node);
  const unsigned count = nodes_.child_count(node);
  const unsigned refs = count + (end != 0 ? 1 : 0);
  if (node == root()) {
    if (refs == 1) {  // the last key: the tree becomes empty
      nodes_.commit(root_field_, 0);
      release_node(node);
      return;
    }
  } else if (refs == 2) {  // one reference would remain: the node goes
    std::uint64_t other = end;
    if (at_end) {
      nodes_.for_each_child(node, 0, [&](unsigned, std::uint64_t* slot) {
        other = *slot;
        return false;
      });
    } else if (end == 0) {
      nodes_.for_each_child(node, 0, [&](unsigned c, std::uint64_t* slot) {
        if (c != chunk) other = *slot;
        return c == chunk;
      });
    }
    if (collapse(parent_slot, node, h, other)) return;
    // No room for artcow's copy: remove in place, leaving a one-reference node (see above).
  }
  if (at_end) {
    nodes_.commit(nodes_.end_slot(node), 0);
    return;
  }
  const NodeType type = nodes_.type(node);
  const bool shrink = type != NodeType::kN4 && count - 1 < type_info(type).min_children;
  const bool copy = cow_ && (type == NodeType::kN4 || type == NodeType::kN16);
  if ((shrink || copy) && rebuild(parent_slot, node, shrink ? smaller(type) : type, h, end,
                                  nodes_.entries(node).without(chunk))) {
    return;
  }
  nodes_.remove_in_place(node, chunk);
}

// `node` (header `h`, in `parent_slot`) is left with the one reference `other`, which takes its
// place. woart: one store of the parent slot, then a node moved up gets its widened header
// (radix::collapse_in_place; a crash between leaves a depth ahead, repaired by Algorithm 2).
// artcow: a node moved up is first copied with the merged header, then the slot is swung.
// False (nothing changed) when artcow finds no room for the copy.
bool ArtEngine::collapse(std::uint64_t* parent_slot, std::uint64_t node, const Header& h,
                         std::uint64_t other) noexcept {
  if (!cow_ || radix::is_leaf(other)) {
    radix::collapse_in_place(nodes_, parent_slot, h.depth, other);
    release_node(node);
    return true;
  }
  const std::uint32_t branch = nodes_.header(other, h.branch() + 1).branch();
  const Header merged =
      Header::from_key(h.depth, branch - h.depth, radix::any_leaf_key(nodes_, other));
  const std::uint64_t copy =
      build(nodes_.type(other), merged, *nodes_.end_slot(other), nodes_.entries(other));
  if (copy == 0) return false;
  region_->fence();
  nodes_.commit(parent_slot, copy);
  release_node(node);
  release_node(other);
  return true;
}

}  // namespace pmcached::engine::art

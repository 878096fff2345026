// WbTreeEngine::upsert: replace in place (an existing key is found by its tag, wbtree_node.h),
// insert into a leaf with room at the position a binary search gives (the entry protocol,
// wbtree_entry.cc), or — when the leaf is full — a second descent that splits every full node
// on the way before entering it (wbtree_split.cc), so that each split's parent has room.
#include <mutex>

#include "engine/pm/persistence.h"
#include "engine/wbtree/wbtree_engine.h"

namespace pmcached::engine::wbtree {

UpsertResult WbTreeEngine::upsert(std::string_view key, ItemRef ref) noexcept {
  pm::OpScope scope(pm::OpKind::kInsert);
  std::unique_lock lock(mutex_);
  Meta* m = ensure_meta();
  if (m == nullptr) return {UpsertStatus::kOutOfMemory, kNoItem};
  const std::uint64_t tag = btree::key_tag(key);
  const std::uint64_t word = btree::tagged(ref, tag);
  if (m->root == 0) return insert_first(m, word);

  const std::uint64_t node = find_leaf(key, nullptr);
  const unsigned entry = find_entry(node, key, tag);
  if (entry != kLeafFanout) {
    std::uint64_t* slot = &leaf(node)->entries[entry];
    const ItemRef previous = btree::ref_of(*slot);
    scope.set_kind(pm::OpKind::kUpdate);
    region_->store_u64_persist(slot, word);
    return {UpsertStatus::kReplaced, previous};
  }
  if (full(node)) return insert_splitting(key, word);
  insert_entry(node, lower_bound(node, key), word);
  keys_.fetch_add(1, std::memory_order_relaxed);
  return {UpsertStatus::kInserted, kNoItem};
}

// The first key: a root leaf holding it, persisted, then published in meta.root.
UpsertResult WbTreeEngine::insert_first(Meta* meta, std::uint64_t entry) noexcept {
  const std::uint64_t node = allocate_node(sizeof(Leaf));
  if (node == 0) return {UpsertStatus::kOutOfMemory, kNoItem};
  Leaf* n = leaf(node);
  n->header.kind = kLeafKind;
  n->header.count = 1;
  n->header.order[0] = 0;
  n->header.bitmap = kValidBit | entry_bit(0);
  n->entries[0] = entry;
  flush_new_node(node, sizeof(Leaf));
  region_->fence();
  region_->store_u64_persist(&meta->root, node);
  keys_.fetch_add(1, std::memory_order_relaxed);
  return {UpsertStatus::kInserted, kNoItem};
}

// `key` is absent and its leaf is full: split the full nodes on its path top-down (the root
// first), then insert into the leaf, which now has room.
UpsertResult WbTreeEngine::insert_splitting(std::string_view key, std::uint64_t entry) noexcept {
  Meta* m = meta();
  if (full(m->root) && !split(m->root, 0, 0)) return {UpsertStatus::kOutOfMemory, kNoItem};
  std::uint64_t node = m->root;
  while (!is_leaf(node)) {
    unsigned pos = child_pos(node, key);
    std::uint64_t child = child_at(node, pos);
    if (full(child)) {
      if (!split(child, node, pos)) return {UpsertStatus::kOutOfMemory, kNoItem};
      pos = child_pos(node, key);
      child = child_at(node, pos);
    }
    node = child;
  }
  insert_entry(node, lower_bound(node, key), entry);
  keys_.fetch_add(1, std::memory_order_relaxed);
  return {UpsertStatus::kInserted, kNoItem};
}

}  // namespace pmcached::engine::wbtree

// WortEngine::upsert: insert into an empty slot, leaf collision (push down), prefix mismatch
// (seed 002 Algorithm 1) and replace. Every path allocates before it writes anything, so an
// allocation failure changes nothing; every path ends with one store_u64_persist that commits.

#include "engine/pm/persistence.h"
#include "engine/radix/radix_tree.h"
#include "engine/wort/wort_engine.h"
#include "engine/wort/wort_factory.h"

namespace pmcached::engine::wort {

UpsertResult WortEngine::upsert_locked(std::string_view key, ItemRef ref) noexcept {
  pm::OpScope scope(pm::OpKind::kInsert);
  const std::uint64_t leaf = leaf_ref(ref);
  const std::size_t key_chunks = Key::count(key);
  if (root() == 0) return insert_first(key, leaf);

  std::uint64_t* slot = root_field_;
  std::uint64_t offset = root();
  std::uint32_t depth = 0;  // the depth the path implies for `offset`
  for (;;) {
    Node* n = node(offset);
    const Header h = radix::checked_header(nodes_, offset, depth);
    if (h.prefix_len > 0) {  // pessimistic: nibbles past the stored 8 come from a leaf
      const std::uint32_t mismatch = radix::prefix_mismatch(nodes_, offset, h, key);
      if (mismatch < h.prefix_len) return split(slot, offset, h, key, leaf, mismatch);
    }
    const std::uint32_t branch = h.branch();
    const unsigned next = key_chunks == branch ? 0 : Key::at(key, branch);
    std::uint64_t* child_slot = slot_for(n, branch, key_chunks, next);
    const std::uint64_t child = *child_slot;
    if (child == 0) {
      region_->store_u64_persist(child_slot, leaf);
      count_keys(1);
      return {UpsertStatus::kInserted, kNoItem};
    }
    if (is_leaf(child)) {
      if (leaf_key(child) == key) {
        scope.set_kind(pm::OpKind::kUpdate);
        region_->store_u64_persist(child_slot, leaf);
        return {UpsertStatus::kReplaced, leaf_item(child)};
      }
      // The END slot only holds the one key of length `branch`, which would be equal.
      return push_down(child_slot, child, key, leaf, branch + 1);
    }
    slot = child_slot;
    offset = child;
    depth = branch + 1;
  }
}

// The first key: a root (depth 0, no prefix) holding its leaf, persisted, then the root field.
UpsertResult WortEngine::insert_first(std::string_view key, std::uint64_t leaf) noexcept {
  const std::uint64_t offset = new_node(Header{});
  if (offset == 0) return {UpsertStatus::kOutOfMemory, kNoItem};
  const std::size_t key_chunks = Key::count(key);
  *slot_for(node(offset), 0, key_chunks, key_chunks == 0 ? 0 : Key::at(key, 0)) = leaf;
  persist_new_node(offset);
  region_->fence();
  region_->store_u64_persist(root_field_, offset);
  count_keys(1);
  return {UpsertStatus::kInserted, kNoItem};
}

// `slot` holds `old_leaf`, a different key sharing the path [0, depth): a new node at `depth`
// with their longest common prefix takes both, and one store of `slot` publishes it.
UpsertResult WortEngine::push_down(std::uint64_t* slot, std::uint64_t old_leaf,
                                   std::string_view key, std::uint64_t leaf,
                                   std::uint32_t depth) noexcept {
  const std::string_view other = leaf_key(old_leaf);
  const std::uint32_t common = Key::common(key, other, depth);
  const std::uint64_t offset = new_node(Header::from_key(depth, common, key));
  if (offset == 0) return {UpsertStatus::kOutOfMemory, kNoItem};
  Node* n = node(offset);
  const std::uint32_t branch = depth + common;
  for (const auto& [k, ref] : {std::pair{key, leaf}, std::pair{other, old_leaf}}) {
    const std::size_t k_chunks = Key::count(k);
    *slot_for(n, branch, k_chunks, k_chunks == branch ? 0 : Key::at(k, branch)) = ref;
  }
  persist_new_node(offset);
  region_->fence();
  region_->store_u64_persist(slot, offset);
  count_keys(1);
  return {UpsertStatus::kInserted, kNoItem};
}

// Algorithm 1 (SplitCmp). The node at `offset` (header `h`, reached through `slot`) has a prefix
// that differs from `key` at prefix nibble `mismatch` (or `key` ends there). A new parent at
// h.depth takes the common part and both the node and the new leaf; the node keeps the rest.
// Persist order: new parent + the node's rewritten header (one 8-byte store) flushed together,
// fence, then the old parent's slot swung. A crash before the swing leaves the node with a depth
// ahead of its path, which Algorithm 2 turns back into the old header.
UpsertResult WortEngine::split(std::uint64_t* slot, std::uint64_t offset, Header h,
                               std::string_view key, std::uint64_t leaf,
                               std::uint32_t mismatch) noexcept {
  // The node's real prefix nibbles.
  const std::string_view sample = radix::any_leaf_key(nodes_, offset);
  const std::uint32_t cut = h.depth + mismatch;  // the new parent's branch
  const std::uint64_t parent = new_node(Header::from_key(h.depth, mismatch, sample));
  if (parent == 0) return {UpsertStatus::kOutOfMemory, kNoItem};
  Node* p = node(parent);
  p->children[Key::at(sample, cut)] = offset;
  const std::size_t key_chunks = Key::count(key);
  *slot_for(p, cut, key_chunks, key_chunks == cut ? 0 : Key::at(key, cut)) = leaf;

  const Header shortened = Header::from_key(cut + 1, h.prefix_len - mismatch - 1, sample);
  Node* n = node(offset);
  __atomic_store_n(&n->header, shortened.pack(), __ATOMIC_RELAXED);
  persist_new_node(parent);
  region_->flush(&n->header, sizeof n->header);
  region_->fence();
  region_->store_u64_persist(slot, parent);
  count_keys(1);
  return {UpsertStatus::kInserted, kNoItem};
}

}  // namespace pmcached::engine::wort

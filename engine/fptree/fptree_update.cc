// FpTreeEngine: upsert, erase, the logged leaf split and the unlink of an emptied leaf. The
// persist orders are described in fptree_factory.h. Every path allocates before it writes, so a
// full heap changes nothing.
#include <cstring>
#include <mutex>
#include <string>

#include "engine/fptree/fptree_engine.h"
#include "engine/pm/persistence.h"

namespace pmcached::engine::fptree {

UpsertResult FpTreeEngine::upsert(std::string_view key, ItemRef ref) noexcept {
  pm::OpScope scope(pm::OpKind::kInsert);
  std::unique_lock lock(mutex_);
  std::uint64_t offset = inner_.find(key);
  if (offset == 0) return insert_first(key, ref);
  const std::uint8_t fp = fingerprint(key);
  Leaf& l = *leaf(offset);
  int slot = find_slot(l, key, fp, key_of_);
  if (slot >= 0) {
    scope.set_kind(pm::OpKind::kUpdate);
    const ItemRef previous = l.refs[slot];
    region_->store_u64_persist(&l.refs[slot], ref);
    return {UpsertStatus::kReplaced, previous};
  }
  slot = free_slot(l);
  if (slot < 0) {
    offset = split(offset, key);
    if (offset == 0) return {UpsertStatus::kOutOfMemory, kNoItem};
    slot = free_slot(*leaf(offset));
  }
  insert_into(offset, slot, fp, ref);
  keys_.fetch_add(1, std::memory_order_relaxed);
  return {UpsertStatus::kInserted, kNoItem};
}

// The entry and its fingerprint first, then the bitmap bit that makes them live.
void FpTreeEngine::insert_into(std::uint64_t offset, int slot, std::uint8_t fp,
                               ItemRef ref) noexcept {
  Leaf& l = *leaf(offset);
  l.refs[slot] = ref;
  l.fingerprints[slot] = fp;
  region_->flush(&l.refs[slot], sizeof(l.refs[slot]));
  region_->flush(&l.fingerprints[slot], 1);
  region_->fence();
  region_->store_u64_persist(&l.bitmap, l.bitmap | (std::uint64_t{1} << slot));
}

// The first leaf (of a new or emptied tree), persisted, then published as the meta root.
UpsertResult FpTreeEngine::insert_first(std::string_view key, ItemRef ref) noexcept {
  btree::Meta* m = ensure_meta();
  const std::uint64_t offset = m == nullptr ? 0 : allocate_node(sizeof(Leaf));
  if (offset == 0) return {UpsertStatus::kOutOfMemory, kNoItem};
  Leaf& l = *leaf(offset);
  l.refs[0] = ref;
  l.fingerprints[0] = fingerprint(key);
  l.bitmap = 1;
  flush_new_node(offset, sizeof(Leaf));
  region_->fence();
  region_->store_u64_persist(&m->root, offset);
  inner_.insert(std::string(key), offset);
  keys_.fetch_add(1, std::memory_order_relaxed);
  return {UpsertStatus::kInserted, kNoItem};
}

// FPTree's split with its micro-log; see fptree_factory.h for the recovery of each step.
std::uint64_t FpTreeEngine::split(std::uint64_t offset, std::string_view key) noexcept {
  const std::uint64_t fresh = allocate_node(sizeof(Leaf));
  if (fresh == 0) return 0;
  btree::Meta& m = *meta();
  m.log[1] = fresh;
  m.log[0] = offset;
  region_->persist(&m.log[0], 2 * sizeof(std::uint64_t));

  Leaf& l = *leaf(offset);
  Leaf& n = *leaf(fresh);
  std::memcpy(static_cast<void*>(&n), &l, sizeof(Leaf));
  const SplitPlan plan = plan_split(l, key_of_);
  std::string bound(plan.bound);
  n.bitmap = plan.right_bits;
  flush_new_node(fresh, sizeof(Leaf));
  region_->fence();
  region_->store_u64_persist(&l.next, fresh);
  region_->store_u64_persist(&l.bitmap, l.bitmap & ~plan.right_bits);

  m.log[0] = 0;
  m.log[1] = 0;
  region_->persist(&m.log[0], 2 * sizeof(std::uint64_t));
  ++leaf_splits_;
  const bool right = key >= bound;
  inner_.insert(std::move(bound), fresh);
  return right ? fresh : offset;
}

ItemRef FpTreeEngine::erase(std::string_view key) noexcept {
  pm::OpScope scope(pm::OpKind::kDelete);
  std::unique_lock lock(mutex_);
  const std::uint64_t offset = inner_.find(key);
  if (offset == 0) return kNoItem;
  Leaf& l = *leaf(offset);
  const int slot = find_slot(l, key, fingerprint(key), key_of_);
  if (slot < 0) return kNoItem;
  const ItemRef previous = l.refs[slot];
  region_->store_u64_persist(&l.bitmap, l.bitmap & ~(std::uint64_t{1} << slot));
  keys_.fetch_sub(1, std::memory_order_relaxed);
  if ((l.bitmap & kAllSlots) == 0) unlink(offset, key);
  return previous;
}

// One store takes the empty leaf out of the chain; only then is it freed.
void FpTreeEngine::unlink(std::uint64_t offset, std::string_view key) noexcept {
  const std::uint64_t before = inner_.previous(key);
  std::uint64_t* link = before == 0 ? &meta()->root : &leaf(before)->next;
  region_->store_u64_persist(link, leaf(offset)->next);
  inner_.erase(key);
  allocator_->free(offset);
}

}  // namespace pmcached::engine::fptree

// NvTreeEngine: upsert and erase — appends committed by the leaf's count, out-of-place splits and
// compactions of full leaves committed by one swing of the word that links the leaf, and unlinks
// of emptied leaves. The persist orders are described in nvtree_factory.h.
//
// Every path allocates before it writes anything, so an allocation failure changes nothing. New
// leaves are written while unreachable, persisted (flush_new_node, then a fence) and published
// by one store_u64_persist; a replaced or unlinked leaf is freed only after that store.
#include <algorithm>
#include <bit>
#include <chrono>
#include <mutex>
#include <vector>

#include "engine/nvtree/nvtree_engine.h"
#include "engine/pm/persistence.h"

namespace pmcached::engine::nvtree {
namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

UpsertResult NvTreeEngine::upsert(std::string_view key, ItemRef ref) noexcept {
  pm::OpScope scope(pm::OpKind::kInsert);
  const std::uint64_t tag = btree::key_tag(key);
  const std::uint64_t entry = btree::tagged(ref, tag);
  std::unique_lock lock(mutex_);
  if (inner_.empty()) return insert_first(entry);
  InnerArray::Position p = inner_.locate(key);
  Leaf* l = leaf(inner_.leaf(p));
  unsigned j = find(*l, key, tag);
  if (j != kNotFound) scope.set_kind(pm::OpKind::kUpdate);
  const unsigned needed = j == kNotFound ? 1 : 2;
  if (l->count + needed > kLeafEntries) {
    if (!restructure(p)) return {UpsertStatus::kOutOfMemory, kNoItem};
    p = inner_.locate(key);
    l = leaf(inner_.leaf(p));
    j = find(*l, key, tag);
  }
  if (j == kNotFound) {
    append(*l, entry);
    keys_.fetch_add(1, std::memory_order_relaxed);
    return {UpsertStatus::kInserted, kNoItem};
  }
  const ItemRef previous = btree::ref_of(l->entries[j]);
  append(*l, entry, negative(j));
  return {UpsertStatus::kReplaced, previous};
}

ItemRef NvTreeEngine::erase(std::string_view key) noexcept {
  pm::OpScope scope(pm::OpKind::kDelete);
  const std::uint64_t tag = btree::key_tag(key);
  std::unique_lock lock(mutex_);
  if (inner_.empty()) return kNoItem;
  InnerArray::Position p = inner_.locate(key);
  Leaf* l = leaf(inner_.leaf(p));
  unsigned j = find(*l, key, tag);
  if (j == kNotFound) return kNoItem;
  const ItemRef previous = btree::ref_of(l->entries[j]);
  if (live_count(*l) == 1) {
    unlink(p);
  } else if (l->count < kLeafEntries) {
    append(*l, negative(j));
  } else if (restructure(p)) {
    p = inner_.locate(key);
    l = leaf(inner_.leaf(p));
    j = find(*l, key, tag);
    append(*l, negative(j));
  } else {
    // Full leaf, full heap: kill the entry in place (nvtree_leaf.h), one atomic store.
    region_->store_u64_persist(&l->entries[j], negative(j));
  }
  keys_.fetch_sub(1, std::memory_order_relaxed);
  return previous;
}

void NvTreeEngine::append(Leaf& l, std::uint64_t first, std::uint64_t second) noexcept {
  const std::uint64_t count = l.count;
  l.entries[count] = first;
  if (second != 0) l.entries[count + 1] = second;
  region_->flush(&l.entries[count], second != 0 ? 16 : 8);
  region_->fence();
  region_->store_u64_persist(&l.count, count + (second != 0 ? 2 : 1));
}

// The first key: meta (if new) and one leaf holding its entry, persisted, then meta.root.
UpsertResult NvTreeEngine::insert_first(std::uint64_t entry) noexcept {
  btree::Meta* m = ensure_meta();
  if (m == nullptr) return {UpsertStatus::kOutOfMemory, kNoItem};
  const std::uint64_t offset = allocate_node(sizeof(Leaf));
  if (offset == 0) return {UpsertStatus::kOutOfMemory, kNoItem};
  Leaf& l = *leaf(offset);
  l.entries[0] = entry;
  l.count = 1;
  flush_new_node(offset, used_bytes(1));
  region_->fence();
  region_->store_u64_persist(&m->root, offset);
  std::vector<InnerArray::Entry> list;
  list.push_back({std::string(), offset});
  inner_.build(std::move(list));
  keys_.fetch_add(1, std::memory_order_relaxed);
  return {UpsertStatus::kInserted, kNoItem};
}

std::uint64_t* NvTreeEngine::link_to(InnerArray::Position p) const noexcept {
  const std::uint64_t before = inner_.predecessor(p);
  return before != 0 ? &leaf(before)->next : &meta()->root;
}

bool NvTreeEngine::restructure(InnerArray::Position p) noexcept {
  const std::uint64_t old = inner_.leaf(p);
  const Leaf& l = *leaf(old);
  std::vector<btree::KeyedRef> live;
  live.reserve(kLeafEntries);
  // KeyedRef.ref holds the whole entry here, so the copies keep their tags.
  for (std::uint64_t mask = live_mask(l); mask != 0; mask &= mask - 1) {
    const std::uint64_t entry = l.entries[std::countr_zero(mask)];
    live.push_back({key_of(btree::ref_of(entry)), entry});
  }
  std::sort(live.begin(), live.end(),
            [](const btree::KeyedRef& a, const btree::KeyedRef& b) { return a.key < b.key; });
  const std::size_t n = live.size();
  const bool split = n > kHalfLeaf;
  const std::size_t left_count = split ? (n + 1) / 2 : n;

  const std::uint64_t left = allocate_node(sizeof(Leaf));
  if (left == 0) return false;
  std::uint64_t right = 0;
  if (split && (right = allocate_node(sizeof(Leaf))) == 0) {
    allocator_->free(left);
    return false;
  }
  const auto fill = [&](std::uint64_t offset, std::size_t begin, std::size_t end,
                        std::uint64_t next) {
    Leaf& x = *leaf(offset);
    for (std::size_t i = begin; i < end; ++i) x.entries[i - begin] = live[i].ref;
    x.count = end - begin;
    x.next = next;
    flush_new_node(offset, used_bytes(x.count));
  };
  fill(left, 0, left_count, split ? right : l.next);
  if (split) fill(right, left_count, n, l.next);
  region_->fence();
  region_->store_u64_persist(link_to(p), left);  // the commit
  allocator_->free(old);

  inner_.replace(p, left);
  if (!split) {
    leaf_compactions_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  leaf_splits_.fetch_add(1, std::memory_order_relaxed);
  const std::int64_t started = now_ns();
  note_rebuild(inner_.insert_after(p, live[left_count].key, right), started);
  return true;
}

void NvTreeEngine::unlink(InnerArray::Position p) noexcept {
  const std::uint64_t offset = inner_.leaf(p);
  region_->store_u64_persist(link_to(p), leaf(offset)->next);
  allocator_->free(offset);
  const std::int64_t started = now_ns();
  note_rebuild(inner_.remove(p), started);
}

void NvTreeEngine::note_rebuild(bool rebuilt, std::int64_t started_ns) noexcept {
  if (!rebuilt) return;
  inner_rebuilds_.fetch_add(1, std::memory_order_relaxed);
  inner_rebuild_ns_.fetch_add(static_cast<std::uint64_t>(now_ns() - started_ns),
                              std::memory_order_relaxed);
}

}  // namespace pmcached::engine::nvtree

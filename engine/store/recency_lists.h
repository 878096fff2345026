// RecencyLists: the store's volatile LRU order of published records, one list per size class of
// the item heap (its allocator's classes, where a free block of one class cannot serve another).
//
// A record is pushed at the head when it is published and removed before it is freed, so every
// record in a list is published. Eviction takes a class's tail (its least recently stored record,
// moved to the head by a second chance), like memcached's per-class LRU. Reads do not touch the
// lists: they set the record's referenced bit (ItemHeader::kReferenced), and the evictor gives a
// referenced tail a second chance instead of evicting it (CLOCK on an LRU list).
//
// The links live beside each record in DRAM (ItemHeap::links); nothing here is persistent: a
// restart rebuilds the lists from the index (Store::recover, oldest cas first). A record's links
// have stamp 0 while it is not listed.
//
// Thread safety: one mutex per class. push() and remove() are called with the record's key
// stripe held (stripe -> list mutex); claim_oldest() is called with no stripe held and copies the
// key under the list mutex, which is safe because a listed record is published, its key immutable,
// and it cannot be freed before remove() takes that mutex.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>

#include "engine/index_engine.h"
#include "engine/store/item_heap.h"
#include "engine/store/store.h"

namespace pmcached::engine {

class RecencyLists {
 public:
  static constexpr std::size_t kNoClass = std::numeric_limits<std::size_t>::max();

  explicit RecencyLists(ItemHeap& heap);

  // Links the published record `ref` at the head of its class; `stamp` orders records across
  // classes (larger = more recent).
  void push(ItemRef ref, std::uint64_t stamp) noexcept;
  // Unlinks `ref` (a listed record, about to be freed or replaced).
  void remove(ItemRef ref) noexcept;
  // push(fresh, stamp) and remove(old) for a record replaced by another, under one lock when
  // both are of one class.
  void replace(ItemRef old, ItemRef fresh, std::uint64_t stamp) noexcept;
  // A record `old` replaced by `fresh`; `old` kNoItem: `fresh` is a new key's.
  struct Replacement {
    ItemRef old = kNoItem;
    ItemRef fresh = kNoItem;
  };
  // replace() of each pair in order (push() of a new key's), all with `stamp`. The cache lines
  // the unlinks read and write (each old record's header and links, then its neighbours' links)
  // are requested for the whole span before the first is used, so that their misses overlap
  // instead of following one another; consecutive pairs of one class share one hold of its mutex.
  void replace_all(std::span<const Replacement> pairs, std::uint64_t stamp) noexcept;

  // A key copied out of a list (no allocation).
  struct Claim {
    ItemRef ref = kNoItem;
    std::size_t key_size = 0;
    char key[kMaxKeyLength];
    [[nodiscard]] std::string_view key_view() const noexcept { return {key, key_size}; }
  };
  // Takes the least recent record of `size_class`: moves it to the head with `stamp` (so that
  // no other evictor claims it too) and copies its key and reference into `out`. The caller then
  // takes the key's stripe and checks that the index still maps the key to `out.ref`. False if
  // the class is empty.
  bool claim_oldest(std::size_t size_class, std::uint64_t stamp, Claim& out) noexcept;

  // The class whose least recent record is the oldest of all, or kNoClass when all are empty.
  [[nodiscard]] std::size_t oldest_class() const noexcept;
  // The class of a record of class size `class_size` (ItemHeader::class_size()).
  [[nodiscard]] std::size_t class_of(std::size_t class_size) const noexcept {
    return heap_.size_class(class_size);
  }
  // Records listed in `size_class` (a relaxed snapshot).
  [[nodiscard]] std::size_t size(std::size_t size_class) const noexcept;
  // The sum of their class sizes (memcached's mem_requested; a relaxed snapshot).
  [[nodiscard]] std::uint64_t requested_bytes(std::size_t size_class) const noexcept;
  // The last access (Unix seconds) of the least recent record of `size_class`, 0 if none.
  // Takes the class's mutex.
  [[nodiscard]] std::int64_t oldest_access(std::size_t size_class) const noexcept;

 private:
  struct alignas(64) List {
    std::mutex mutex;
    ItemRef head = kNoItem;
    ItemRef tail = kNoItem;
    std::atomic<std::size_t> count{0};
    std::atomic<std::uint64_t> requested{0};  // sum of the listed records' class sizes
    // The tail's stamp, readable without the mutex; UINT64_MAX when the list is empty.
    std::atomic<std::uint64_t> tail_stamp{std::numeric_limits<std::uint64_t>::max()};
  };

  List& list_of(ItemRef ref) const noexcept;
  std::uint64_t class_size_of(ItemRef ref) const noexcept;
  void link_head(List& list, ItemRef ref, std::uint64_t stamp) noexcept;
  void unlink(List& list, ItemRef ref) noexcept;
  // replace() of two records of `list` (push() if `old` is kNoItem), whose mutex the caller
  // holds; `stamp` >= 1.
  void replace_locked(List& list, ItemRef old, ItemRef fresh, std::uint64_t stamp) noexcept;

  ItemHeap& heap_;
  std::size_t class_count_;
  std::unique_ptr<List[]> lists_;
};

}  // namespace pmcached::engine

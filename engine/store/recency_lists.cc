#include "engine/store/recency_lists.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace pmcached::engine {
namespace {

// Adds `delta` (modulo 2^64) to a list's counter. Its writers hold the list's mutex, so a plain
// load and store do; a locked add would also wait for the stores before it (the neighbours'
// links, often cache misses) to complete.
template <typename T>
void add(std::atomic<T>& counter, std::type_identity_t<T> delta) noexcept {
  counter.store(counter.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
}

}  // namespace

RecencyLists::RecencyLists(ItemHeap& heap)
    : heap_(heap),
      class_count_(heap.class_count()),
      lists_(std::make_unique<List[]>(class_count_)) {}

RecencyLists::List& RecencyLists::list_of(ItemRef ref) const noexcept {
  return lists_[heap_.size_class(heap_.item(ref)->class_size())];
}

std::uint64_t RecencyLists::class_size_of(ItemRef ref) const noexcept {
  return heap_.item(ref)->class_size();
}

void RecencyLists::link_head(List& list, ItemRef ref, std::uint64_t stamp) noexcept {
  pm::BlockLinks& links = heap_.links(ref);
  links.prev = kNoItem;
  links.next = list.head;
  links.stamp = stamp;
  if (list.head != kNoItem) heap_.links(list.head).prev = ref;
  list.head = ref;
  if (list.tail == kNoItem) {
    list.tail = ref;
    list.tail_stamp.store(stamp, std::memory_order_relaxed);
  }
}

void RecencyLists::unlink(List& list, ItemRef ref) noexcept {
  pm::BlockLinks& links = heap_.links(ref);
  if (links.prev != kNoItem) {
    heap_.links(links.prev).next = links.next;
  } else {
    list.head = links.next;
  }
  if (links.next != kNoItem) {
    heap_.links(links.next).prev = links.prev;
  } else {
    list.tail = links.prev;
    list.tail_stamp.store(list.tail == kNoItem ? std::numeric_limits<std::uint64_t>::max()
                                               : heap_.links(list.tail).stamp,
                          std::memory_order_relaxed);
  }
  links = pm::BlockLinks{};  // stamp 0: not listed
}

void RecencyLists::push(ItemRef ref, std::uint64_t stamp) noexcept {
  List& list = list_of(ref);
  std::lock_guard lock(list.mutex);
  link_head(list, ref, std::max<std::uint64_t>(stamp, 1));
  add(list.count, 1);
  add(list.requested, class_size_of(ref));
}

void RecencyLists::remove(ItemRef ref) noexcept {
  List& list = list_of(ref);
  std::lock_guard lock(list.mutex);
  // A record the index holds but that was never listed (one recovery found corrupt and could
  // not unlink) has no links to undo.
  if (heap_.links(ref).stamp == 0) return;
  unlink(list, ref);
  add(list.count, 0 - std::size_t{1});
  add(list.requested, 0 - class_size_of(ref));
}

void RecencyLists::replace(ItemRef old, ItemRef fresh, std::uint64_t stamp) noexcept {
  List& list = list_of(fresh);
  if (&list_of(old) != &list) {
    push(fresh, stamp);
    remove(old);
    return;
  }
  std::lock_guard lock(list.mutex);
  replace_locked(list, old, fresh, std::max<std::uint64_t>(stamp, 1));
}

void RecencyLists::replace_locked(List& list, ItemRef old, ItemRef fresh,
                                  std::uint64_t stamp) noexcept {
  link_head(list, fresh, stamp);
  add(list.requested, class_size_of(fresh));
  if (old != kNoItem && heap_.links(old).stamp != 0) {
    unlink(list, old);
    add(list.requested, 0 - class_size_of(old));
  } else {
    add(list.count, 1);  // a new key, or `old` was never listed
  }
}

void RecencyLists::replace_all(std::span<const Replacement> pairs, std::uint64_t stamp) noexcept {
  stamp = std::max<std::uint64_t>(stamp, 1);
  for (const Replacement& pair : pairs) {
    __builtin_prefetch(&heap_.links(pair.fresh), 1);
    if (pair.old == kNoItem) continue;
    __builtin_prefetch(heap_.item(pair.old));  // list_of() reads its class size
    __builtin_prefetch(&heap_.links(pair.old), 1);
  }
  std::size_t begin = 0;
  while (begin < pairs.size()) {
    List& list = list_of(pairs[begin].fresh);
    std::size_t end = begin;
    while (end < pairs.size() && &list_of(pairs[end].fresh) == &list &&
           (pairs[end].old == kNoItem || &list_of(pairs[end].old) == &list)) {
      ++end;
    }
    if (end == begin) {  // a record that changed class
      replace(pairs[begin].old, pairs[begin].fresh, stamp);
      ++begin;
      continue;
    }
    std::lock_guard lock(list.mutex);
    // The neighbours as they are now; a pair before may relink one, which only wastes a fetch.
    for (std::size_t i = begin; i < end; ++i) {
      if (pairs[i].old == kNoItem) continue;
      const pm::BlockLinks& links = heap_.links(pairs[i].old);
      if (links.prev != kNoItem) __builtin_prefetch(&heap_.links(links.prev), 1);
      if (links.next != kNoItem) __builtin_prefetch(&heap_.links(links.next), 1);
    }
    for (std::size_t i = begin; i < end; ++i) {
      replace_locked(list, pairs[i].old, pairs[i].fresh, stamp);
    }
    begin = end;
  }
}

bool RecencyLists::claim_oldest(std::size_t size_class, std::uint64_t stamp, Claim& out) noexcept {
  List& list = lists_[size_class];
  std::lock_guard lock(list.mutex);
  const ItemRef ref = list.tail;
  if (ref == kNoItem) return false;
  const std::string_view key = heap_.item(ref)->key();
  out.ref = ref;
  out.key_size = key.size();
  std::memcpy(out.key, key.data(), key.size());
  unlink(list, ref);
  link_head(list, ref, std::max<std::uint64_t>(stamp, 1));
  return true;
}

std::size_t RecencyLists::oldest_class() const noexcept {
  std::size_t oldest = kNoClass;
  std::uint64_t oldest_stamp = std::numeric_limits<std::uint64_t>::max();
  for (std::size_t c = 0; c < class_count_; ++c) {
    const std::uint64_t stamp = lists_[c].tail_stamp.load(std::memory_order_relaxed);
    if (stamp < oldest_stamp) {
      oldest = c;
      oldest_stamp = stamp;
    }
  }
  return oldest;
}

std::size_t RecencyLists::size(std::size_t size_class) const noexcept {
  return lists_[size_class].count.load(std::memory_order_relaxed);
}

std::uint64_t RecencyLists::requested_bytes(std::size_t size_class) const noexcept {
  return lists_[size_class].requested.load(std::memory_order_relaxed);
}

std::int64_t RecencyLists::oldest_access(std::size_t size_class) const noexcept {
  List& list = lists_[size_class];
  std::lock_guard lock(list.mutex);
  if (list.tail == kNoItem) return 0;
  // A fetch moves it under the record's stripe, which is not held here (Store::note_access).
  return std::atomic_ref<std::int64_t>(heap_.item(list.tail)->last_access)
      .load(std::memory_order_relaxed);
}

}  // namespace pmcached::engine

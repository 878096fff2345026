#include "engine/store/recency_lists.h"

#include <algorithm>
#include <cstring>

namespace pmcached::engine {

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
  list.count.fetch_add(1, std::memory_order_relaxed);
  list.requested.fetch_add(class_size_of(ref), std::memory_order_relaxed);
}

void RecencyLists::remove(ItemRef ref) noexcept {
  List& list = list_of(ref);
  std::lock_guard lock(list.mutex);
  // A record the index holds but that was never listed (one recovery found corrupt and could
  // not unlink) has no links to undo.
  if (heap_.links(ref).stamp == 0) return;
  unlink(list, ref);
  list.count.fetch_sub(1, std::memory_order_relaxed);
  list.requested.fetch_sub(class_size_of(ref), std::memory_order_relaxed);
}

void RecencyLists::replace(ItemRef old, ItemRef fresh, std::uint64_t stamp) noexcept {
  List& list = list_of(fresh);
  if (&list_of(old) != &list) {
    push(fresh, stamp);
    remove(old);
    return;
  }
  std::lock_guard lock(list.mutex);
  link_head(list, fresh, std::max<std::uint64_t>(stamp, 1));
  list.requested.fetch_add(class_size_of(fresh), std::memory_order_relaxed);
  if (heap_.links(old).stamp != 0) {
    unlink(list, old);
    list.requested.fetch_sub(class_size_of(old), std::memory_order_relaxed);
  } else {
    list.count.fetch_add(1, std::memory_order_relaxed);  // `old` was never listed
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
  return list.tail == kNoItem ? 0 : heap_.item(list.tail)->last_access;
}

}  // namespace pmcached::engine

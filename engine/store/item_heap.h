// ItemHeap: where the store's item records live — ordinary memory, or a persistent pool.
//
// The store builds a record (ItemHeader + key + value, engine/store/item.h) in a block from the
// heap, seals it (checksum) and hands it to flush_before_publish(): it is written back with the
// index's first fence, so it is durable BEFORE the reference to it can be (pm_region.h,
// "Publishing order"). A record is freed only after the index no longer refers to it. An
// ItemRef is whatever the heap says: a pointer for DRAM, a pool offset for PM (stable across
// restarts).
//
// Size classes: both heaps use the pm::Allocator with memcached's slab classes (a pool keeps the
// classes it was made with). Every size below that chooses a class (allocate, footprint,
// size_class, evacuation_ranges) is a record's CLASS SIZE, memcached's ITEM_ntotal
// (memcached_item_size, ItemHeader::class_size()): at least 11 bytes more than the record, so
// the record fits, and an item lands in memcached's class number.
//
// Thread safety: allocate/free are thread-safe; a record is accessed under its key's stripe
// lock (see store_impl.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/index_engine.h"
#include "engine/pm/allocator.h"
#include "engine/store/item.h"

namespace pmcached::pm {
class Pool;
}  // namespace pmcached::pm

namespace pmcached::engine {

class ItemHeap {
 public:
  virtual ~ItemHeap() = default;

  // A block of at least `size` bytes, or nullptr when the heap is full.
  [[nodiscard]] virtual ItemHeader* allocate(std::size_t size) noexcept = 0;
  virtual void free(ItemHeader* item) noexcept = 0;

  [[nodiscard]] virtual ItemRef ref_of(const ItemHeader* item) const noexcept = 0;
  [[nodiscard]] virtual ItemHeader* item(ItemRef ref) const noexcept = 0;

  // The memory a record of class size `size` really takes (the allocator's block size):
  // what the store's memory limit counts, so eviction starts before allocations fail.
  [[nodiscard]] virtual std::size_t footprint(std::size_t size) const noexcept = 0;

  // Size classes: records of one class share their blocks. The store keeps one recency list per
  // class. Classes 0 .. class_count() - 2 are memcached's classes 1 .. class_count() - 1; the
  // last holds records larger than slab_chunk_max (runs of whole pages).
  [[nodiscard]] virtual std::size_t class_count() const noexcept = 0;
  [[nodiscard]] virtual std::size_t size_class(std::size_t size) const noexcept = 0;
  // Per class as above (the allocator's view: pages, blocks in use), for `stats slabs`.
  [[nodiscard]] virtual std::vector<pm::ClassUsage> class_usage() const = 0;
  // Bytes of one page (memcached's slab page: total_malloced counts them).
  [[nodiscard]] virtual std::size_t page_size() const noexcept = 0;
  // The volatile list links of an allocated record (DRAM, never persisted).
  [[nodiscard]] virtual pm::BlockLinks& links(ItemRef ref) const noexcept = 0;

  // When allocating class size `size` fails for lack of a chunk of that size class: up to
  // `count` [begin, end) reference ranges whose records the store should evict to free a chunk.
  [[nodiscard]] virtual std::vector<std::pair<ItemRef, ItemRef>> evacuation_ranges(
      std::size_t size, std::size_t count) const = 0;

  // Makes [addr, addr+len) durable (flush + fence); a no-op for DRAM.
  virtual void persist(const void* addr, std::size_t len) noexcept = 0;
  // Flushes [addr, addr+len) without a fence, and the fence for such flushes (records made
  // durable together, Store::store_batch). No-ops for DRAM.
  virtual void flush(const void* /*addr*/, std::size_t /*len*/) noexcept {}
  virtual void fence() noexcept {}
  // Hands over a record the index is about to publish: it is flushed and fenced with the
  // index's first fence, or before its publishing store (pm_region.h, "Publishing order").
  // A no-op for DRAM.
  virtual void flush_before_publish(const void* addr, std::size_t len) noexcept = 0;
  // After the index's upsert, whatever it did: makes the record durable if the index has not
  // (it published without any fence, or failed), so no reply precedes it.
  virtual void finish_publish() noexcept {}

  // The pool behind a persistent heap (superblock: cas high-water mark, flush_all state);
  // nullptr for DRAM.
  [[nodiscard]] virtual pm::Pool* pool() const noexcept { return nullptr; }
  // The allocator of a persistent heap (recovery rebuilds it); nullptr for DRAM.
  [[nodiscard]] virtual pm::Allocator* allocator() const noexcept { return nullptr; }

  // The key of a record, for EngineContext::key_of. A reference that cannot be a record of
  // this heap (a corrupt pool) gives an empty key rather than a read out of bounds.
  [[nodiscard]] std::string_view key_of(ItemRef ref) const noexcept {
    return plausible(ref) ? item(ref)->key() : std::string_view();
  }

  // Whether `ref` can be a record of this heap: aligned, and header, key and value in bounds.
  [[nodiscard]] virtual bool plausible(ItemRef ref) const noexcept = 0;

  // Allocates a record for `key` with room for `value_size` value bytes (left uninitialised), in
  // the class of its class size; every other header field but client_flags is zero.
  [[nodiscard]] ItemHeader* allocate_item(std::string_view key, std::size_t value_size,
                                          std::uint32_t client_flags) noexcept;
};

// Records in volatile memory: `bytes` of pages (rounded up to whole pages, at least one) in an
// anonymous mapping that is reserved, not committed; ItemRef = address. Nothing is durable.
[[nodiscard]] std::unique_ptr<ItemHeap> make_dram_heap(std::size_t bytes,
                                                       const pm::SlabSettings& slabs = {});

// Records in a pool's heap; ItemRef = pool offset. Both must outlive the heap.
[[nodiscard]] std::unique_ptr<ItemHeap> make_pm_heap(pm::Pool& pool, pm::Allocator& allocator);

}  // namespace pmcached::engine

// BTreeEngine: the IndexEngine shell the persistent B+-trees (fptree, wbtree, nvtree; seed 002
// §2.2) share: the pool binding, the meta block the pool's root field names, the engine lock and
// key count, the block walk for the allocator rebuild (the meta block, then the engine's nodes)
// and `stats engine` (the figures of the radix engines, from the engine's TreeFigures, plus the
// engine's own counters). An engine adds lookup, upsert, erase, scan and recover.
//
// Keys live out of line: an entry holds the item reference, and key_of(ref) reads the key from
// the item record (as in seed 002 §5.5, where wB+Tree and FPTree point to keys stored apart).
// Leaves are unsorted; scans sort each leaf on the way out (visit_sorted).
//
// Start-up: the constructor only checks the meta block (a corrupt pool throws
// std::runtime_error); recover() — which the store calls once on every existing pool before any
// other call — replays the engine's log and builds its volatile nodes.
//
// Thread safety: lookup/scan/size/stats/for_each_block take mutex_ shared, upsert/erase/recover
// exclusive (the engines do so). scan() holds the lock while calling the visitor.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/engine_context.h"
#include "engine/engine_mutex.h"
#include "engine/index_engine.h"
#include "engine/pm/allocator.h"
#include "engine/pm/pm_region.h"
#include "engine/pm/pool.h"
#include "engine/pool_binding.h"

namespace pmcached::engine::btree {

// One cache line, created with the first key; the pool's root field names it. Its magic names
// the engine's node layout version (layout history: docs/LAYOUTS.md).
struct Meta {
  std::uint64_t magic;   // the engine's layout tag, checked at open
  std::uint64_t root;    // fptree, nvtree: the first leaf of the chain; wbtree: the root node
  std::uint64_t log[6];  // the engine's split log; all zero while no split is in flight
};
static_assert(sizeof(Meta) == 64);

// What `stats engine` reports about a tree's shape (computed under the shared lock).
struct TreeFigures {
  std::vector<std::pair<std::string, std::uint64_t>> nodes_by_type;  // e.g. {"leaf", 1200}
  std::uint64_t node_bytes = 0;      // persistent blocks of the index, the meta block included
  std::uint64_t dram_bytes = 0;      // volatile inner nodes (fptree, nvtree)
  std::uint64_t leaf_depth_sum = 0;  // over all keys: nodes a lookup visits, its leaf included
};

// A leaf entry with its key, for sorting on the way out.
struct KeyedRef {
  std::string_view key;
  ItemRef ref;
};

// Sorts `entries` by key and visits those >= `from` in order; false once `visit` returned false.
bool visit_sorted(std::vector<KeyedRef>& entries, std::string_view from,
                  const std::function<bool(std::string_view key, ItemRef ref)>& visit);

class BTreeEngine : public IndexEngine {
 public:
  [[nodiscard]] EngineCapabilities capabilities() const noexcept final {
    return {.ordered = true, .concurrent = true, .persistent = true};
  }
  [[nodiscard]] std::size_t size() const noexcept final {
    return keys_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::vector<EngineStat> stats() const final;
  void for_each_block(const std::function<void(std::uint64_t offset)>& visit) const final;

 protected:
  // Throws std::runtime_error when the root field names no meta block of this engine.
  BTreeEngine(const EngineContext& context, std::string_view name, std::uint64_t magic);

  [[nodiscard]] Meta* meta() const noexcept;  // nullptr until the first key
  // The meta block, created (persisted, then published in the root field) if there is none;
  // nullptr when the heap is full.
  [[nodiscard]] Meta* ensure_meta() noexcept;

  // A zeroed index block of `bytes`, or 0 when the heap is full.
  [[nodiscard]] std::uint64_t allocate_node(std::size_t bytes) noexcept;
  // Flushes a node built out of place before it is published (tests may skip it on purpose:
  // engine/pm/fault_injection.h). The publishing store fences.
  void flush_new_node(std::uint64_t offset, std::size_t bytes) noexcept;
  // True when [offset, offset + bytes) lies in the heap, 8-byte aligned (a pool check).
  [[nodiscard]] bool in_heap(std::uint64_t offset, std::size_t bytes) const noexcept;

  template <typename T>
  [[nodiscard]] T* at(std::uint64_t offset) const noexcept {
    return region_->at<T>(offset);
  }
  [[nodiscard]] std::string_view key_of(ItemRef ref) const { return key_of_(ref); }

  // Every block the engine owns besides the meta block (shared lock held).
  virtual void visit_blocks(const std::function<void(std::uint64_t offset)>& visit) const = 0;
  virtual TreeFigures figures() const = 0;  // shared lock held
  // The engine's own counters (splits, log replays, rebuilds, ...), appended to `stats engine`
  // (shared lock held).
  virtual void extra_stats(std::vector<EngineStat>& /*out*/) const {}

  PoolBinding binding_;
  pm::Pool* pool_;
  pm::Allocator* allocator_;
  pm::PmRegion* region_;
  std::function<std::string_view(ItemRef)> key_of_;
  std::uint64_t magic_;
  mutable EngineMutex mutex_;
  std::atomic<std::size_t> keys_{0};
};

}  // namespace pmcached::engine::btree

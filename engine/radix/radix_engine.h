// RadixEngine<Nodes>: the IndexEngine shell the radix engines (wort, woart, artcow) share: the
// pool binding (or a private in-memory pool for the engine-agnostic unit tests), the root field,
// the engine lock and key count, and everything that is the same over any node layout: lookup,
// ordered scan, recovery (validation, Algorithm 2 where a depth is stored, an emptied root
// unlinked), the block walk for the allocator rebuild, and `stats engine`. An engine adds its
// upsert/erase (the commit protocols) and its name.
//
// Nodes is a radix_tree.h node-access type constructed as Nodes(region, key_of, args...), with
// also: `bool stores_depth() const`, `static constexpr std::array<const char*, N> kTypeNames`
// and `unsigned type_index(node) const` (per-type node counts in stats; N = 0 for one type).
//
// Group commit: upsert() and upsert_batch() take mutex_ exclusive and call the engine's
// upsert_locked() once per key; a batch runs inside one pm::PmRegion::PublishBatch (one fence at
// its end instead of one per publish) and frees the nodes its upserts unlinked after that fence.
// Between the publishes no locked instruction waits for their write-backs (node frees are
// deferred, key counts are plain stores) but the allocator's lock, when an insert makes a node.
//
// Thread safety: lookup/scan/size/stats/for_each_block take mutex_ shared, recover() exclusive;
// upsert, upsert_batch and an engine's erase take it exclusive. scan() holds the lock while
// calling the visitor.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine_context.h"
#include "engine/engine_mutex.h"
#include "engine/engine_stats.h"
#include "engine/index_engine.h"
#include "engine/pm/allocator.h"
#include "engine/pm/persistence.h"
#include "engine/pm/pm_region.h"
#include "engine/pm/pool.h"
#include "engine/pool_binding.h"
#include "engine/radix/radix_tree.h"

namespace pmcached::engine::radix {

template <typename Nodes>
class RadixEngine : public IndexEngine {
 public:
  [[nodiscard]] EngineCapabilities capabilities() const noexcept override {
    return {.ordered = true, .concurrent = true, .persistent = true, .group_commit = true};
  }
  [[nodiscard]] UpsertResult upsert(std::string_view key, ItemRef ref) noexcept final {
    std::unique_lock lock(mutex_);
    return upsert_locked(key, ref);
  }
  void upsert_batch(std::span<BatchUpsert> batch) noexcept final;
  [[nodiscard]] ItemRef lookup(std::string_view key) const noexcept override {
    std::shared_lock lock(mutex_);
    return leaf_item(find_leaf(nodes_, root(), key, [this](std::uint64_t ref) { request(ref); }));
  }
  void scan(std::string_view from,
            const std::function<bool(std::string_view key, ItemRef ref)>& visit) const override {
    std::shared_lock lock(mutex_);
    if (root() != 0) scan_from(nodes_, root(), 0, !from.empty(), from, visit);
  }
  [[nodiscard]] std::size_t size() const noexcept override {
    return keys_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::vector<EngineStat> stats() const override;
  void recover() override;
  // A corrupt record is found by a route that does not read its (maybe damaged) key
  // (radix::route_to) and erased by reference (erase_routed).
  [[nodiscard]] std::vector<ItemRef> drop_corrupt(const std::vector<ItemRef>& corrupt) override;
  void for_each_block(const std::function<void(std::uint64_t offset)>& visit) const override {
    std::shared_lock lock(mutex_);
    WalkTotals totals;
    walk(nodes_, root(), 0, totals, visit);
  }

 protected:
  // Binds the pool and validates the tree it holds: a corrupt pool throws std::runtime_error
  // here, before anything follows a wild reference.
  template <typename... NodeArgs>
  RadixEngine(const EngineContext& context, std::string_view engine_name, NodeArgs&&... node_args)
      : binding_(context, engine_name),
        pool_(&binding_.pool()),
        allocator_(&binding_.allocator()),
        region_(&pool_->region()),
        root_field_(pool_->root_field()),
        nodes_(region_, context.key_of, std::forward<NodeArgs>(node_args)...) {
    validate_structure(nodes_, root(), region_->size());
    recount();
  }

  // erase() along `route`, the leaf matched by its item `expected` instead of by its key.
  [[nodiscard]] virtual ItemRef erase_routed(std::string_view route, ItemRef expected) noexcept = 0;

  // The engine's upsert (its commit protocol), with mutex_ held exclusive. A node it unlinks goes
  // to release_node(); the key count changes through count_keys().
  [[nodiscard]] virtual UpsertResult upsert_locked(std::string_view key, ItemRef ref) noexcept = 0;

  // Frees an index node a change has just unlinked: at once, or inside a batch after the batch's
  // fence (the block could otherwise be reused and written before the unlinking store is
  // durable). mutex_ held exclusive.
  void release_node(std::uint64_t offset) noexcept {
    if (batching_) {
      unlinked_[unlinked_count_++] = offset;
    } else {
      allocator_->free(offset);
    }
  }
  // Adds `delta` to the key count, mutex_ held exclusive: a plain store, since a locked
  // instruction would wait for the batch's write-backs.
  void count_keys(std::ptrdiff_t delta) noexcept {
    keys_.store(keys_.load(std::memory_order_relaxed) + static_cast<std::size_t>(delta),
                std::memory_order_relaxed);
  }

  [[nodiscard]] std::uint64_t root() const noexcept {
    return __atomic_load_n(root_field_, __ATOMIC_RELAXED);
  }
  void recount() {
    WalkTotals totals;
    walk(nodes_, root(), 0, totals, [](std::uint64_t) {});
    keys_.store(totals.leaves, std::memory_order_relaxed);
  }

  PoolBinding binding_;
  pm::Pool* pool_;
  pm::Allocator* allocator_;
  pm::PmRegion* region_;
  std::uint64_t* root_field_;
  Nodes nodes_;
  mutable EngineMutex mutex_;
  std::atomic<std::size_t> keys_{0};

 private:
  // A batch is split into groups of this many keys; an upsert unlinks at most two nodes.
  static constexpr std::size_t kBatchGroup = 32;
  void prefetch_paths(std::span<const BatchUpsert> group) const noexcept;
  // Requests the cache lines a descent reads next at `ref`: a node's header and first child slots
  // (all three lines of a WORT node), or the start of a leaf's record and its key.
  void request(std::uint64_t ref) const noexcept {
    const std::uint64_t offset = is_leaf(ref) ? leaf_item(ref) : ref;
    if (offset >= region_->size()) return;
    const char* line = region_->base() + offset;
    __builtin_prefetch(line);
    __builtin_prefetch(line + 64);
    if (!is_leaf(ref)) __builtin_prefetch(line + 128);
  }
  bool batching_ = false;
  std::size_t unlinked_count_ = 0;
  std::array<std::uint64_t, 2 * kBatchGroup> unlinked_{};
};

template <typename Nodes>
void RadixEngine<Nodes>::upsert_batch(std::span<BatchUpsert> batch) noexcept {
  std::unique_lock lock(mutex_);
  for (std::size_t begin = 0; begin < batch.size(); begin += kBatchGroup) {
    const std::span<BatchUpsert> group =
        batch.subspan(begin, std::min(kBatchGroup, batch.size() - begin));
    prefetch_paths(group);
    {
      pm::PmRegion::PublishBatch publish(*region_);
      batching_ = true;
      for (BatchUpsert& entry : group) entry.result = upsert_locked(entry.key, entry.ref);
      batching_ = false;
    }  // the fence: every publish of the group is durable
    for (std::size_t i = 0; i < unlinked_count_; ++i) allocator_->free(unlinked_[i]);
    unlinked_count_ = 0;
  }
}

// Each upsert descends to its key's leaf and reads the record the leaf points at (to compare the
// keys): misses one after another, key after key. Here the group's keys descend together, one
// level per round, each round requesting every key's next node (or, at a leaf, its record)
// before the next round reads any, so the misses of different keys overlap; the upserts then
// find their paths and records in the cache. Reads nodes only.
template <typename Nodes>
void RadixEngine<Nodes>::prefetch_paths(std::span<const BatchUpsert> group) const noexcept {
  std::array<std::uint64_t, kBatchGroup> at{};
  std::array<std::uint32_t, kBatchGroup> path{};
  at.fill(root());
  bool descending = root() != 0 && !is_leaf(root());
  while (descending) {
    descending = false;
    for (std::size_t i = 0; i < group.size(); ++i) {
      if (at[i] == 0 || is_leaf(at[i])) continue;
      at[i] = step_toward(nodes_, at[i], path[i], group[i].key);
      if (at[i] == 0) continue;
      request(at[i]);
      descending = descending || !is_leaf(at[i]);
    }
  }
}

// Engines that store a depth get Algorithm 2 over the whole tree (repair_depths); the others
// (artcow) leave nothing to repair, so recovery only validates. An emptied root is unlinked.
template <typename Nodes>
void RadixEngine<Nodes>::recover() {
  pm::OpScope scope(pm::OpKind::kRecovery);
  std::unique_lock lock(mutex_);
  // The constructor has validated the structure already; recover() is called once, right after.
  if (root() != 0) {
    if (nodes_.stores_depth()) repair_depths(nodes_, root_field_, 0, /*is_root=*/true);
    const bool no_child =
        nodes_.for_each_child(root(), 0, [](unsigned, std::uint64_t*) { return false; });
    if (*nodes_.end_slot(root()) == 0 && no_child) {
      nodes_.commit(root_field_, 0);  // unreachable nodes are free
    }
  }
  recount();
}

template <typename Nodes>
std::vector<ItemRef> RadixEngine<Nodes>::drop_corrupt(const std::vector<ItemRef>& corrupt) {
  std::vector<ItemRef> removed;
  for (const ItemRef item : corrupt) {
    std::string route;
    {
      std::shared_lock lock(mutex_);
      if (root() == 0 || !route_to(nodes_, root(), 0, item, route)) continue;
    }
    if (erase_routed(route, item) == item) removed.push_back(item);
  }
  return removed;
}

template <typename Nodes>
std::vector<EngineStat> RadixEngine<Nodes>::stats() const {
  WalkTotals totals;
  std::array<std::uint64_t, Nodes::kTypeNames.size()> by_type{};
  std::uint64_t node_bytes = 0;
  {
    std::shared_lock lock(mutex_);
    walk(nodes_, root(), 0, totals, [&](std::uint64_t node) {
      if constexpr (Nodes::kTypeNames.size() > 0) ++by_type[nodes_.type_index(node)];
      node_bytes += allocator_->block_size(node);
    });
  }
  std::vector<EngineStat> out = {
      {"engine", std::string(name())},
      {"persistent", "yes"},
      {"keys", std::to_string(size())},
      {"nodes", std::to_string(totals.nodes)},
  };
  for (std::size_t i = 0; i < by_type.size(); ++i) {
    out.push_back({std::string("nodes_") + Nodes::kTypeNames[i], std::to_string(by_type[i])});
  }
  out.push_back({"node_bytes", std::to_string(node_bytes)});
  out.push_back({"bytes_per_key", format_ratio(node_bytes, totals.leaves)});
  out.push_back({"leaf_depth_avg", format_ratio(totals.leaf_depth_sum, totals.leaves)});
  append_persist_stats(out);
  return out;
}

}  // namespace pmcached::engine::radix

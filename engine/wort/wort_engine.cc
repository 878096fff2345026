// WortEngine: construction, node helpers, lookup, scan, stats. See wort_engine.h.
#include "engine/wort/wort_engine.h"

#include <cstring>
#include <mutex>

#include "engine/engine_stats.h"
#include "engine/pm/persistence.h"
#include "engine/radix/fault_injection.h"
#include "engine/radix/radix_tree.h"
#include "engine/wort/wort_tree.h"

namespace pmcached::engine {
namespace wort {

WortEngine::WortEngine(const EngineContext& context)
    : pool_(context.pool),
      allocator_(context.allocator),
      nodes_(nullptr, context.key_of) {
  if (pool_ == nullptr || allocator_ == nullptr) {
    own_pool_ = pm::Pool::open_region(pm::PmRegion::in_memory(kPrivatePoolBytes), kWortEngineName);
    own_allocator_ = std::make_unique<pm::Allocator>(own_pool_->region(), own_pool_->heap_begin(),
                                                     own_pool_->heap_end());
    pool_ = own_pool_.get();
    allocator_ = own_allocator_.get();
  }
  region_ = &pool_->region();
  root_field_ = pool_->root_field();
  nodes_ = WortNodes(region_, context.key_of);
  // Never walk a wild reference: a corrupt pool throws here, before anything trusts it.
  radix::validate_structure(nodes_, root(), region_->size());
  recount();
}

WortEngine::~WortEngine() = default;

std::string_view WortEngine::name() const noexcept { return kWortEngineName; }

std::uint64_t WortEngine::root() const noexcept {
  return __atomic_load_n(root_field_, __ATOMIC_RELAXED);
}

std::uint64_t WortEngine::new_node(Header h) noexcept {
  const std::uint64_t offset = allocator_->allocate(sizeof(Node), pm::BlockUse::kIndex);
  if (offset == 0) return 0;
  Node* n = node(offset);
  std::memset(static_cast<void*>(n), 0, sizeof(Node));
  n->header = h.pack();
  if (node_block_bytes_.load(std::memory_order_relaxed) == 0) {
    node_block_bytes_.store(allocator_->block_size(offset), std::memory_order_relaxed);
  }
  return offset;
}

void WortEngine::persist_new_node(std::uint64_t offset) noexcept {
  if (!radix::FaultInjection::skip_new_node_flush) region_->flush(node(offset), sizeof(Node));
}

void WortEngine::free_node(std::uint64_t offset) noexcept { allocator_->free(offset); }

ItemRef WortEngine::lookup(std::string_view key) const noexcept {
  std::shared_lock lock(mutex_);
  return leaf_item(radix::find_leaf(nodes_, root(), key));
}

void WortEngine::scan(std::string_view from,
                      const std::function<bool(std::string_view key, ItemRef ref)>& visit) const {
  std::shared_lock lock(mutex_);
  const std::uint64_t r = root();
  if (r != 0) radix::scan_from(nodes_, r, 0, !from.empty(), from, visit);
}

std::vector<EngineStat> WortEngine::stats() const {
  radix::WalkTotals totals;
  {
    std::shared_lock lock(mutex_);
    const std::uint64_t r = root();
    radix::walk(nodes_, r, 0, totals, [](std::uint64_t) {});
    if (r != 0 && node_block_bytes_.load(std::memory_order_relaxed) == 0) {
      node_block_bytes_.store(allocator_->block_size(r), std::memory_order_relaxed);
    }
  }
  const std::uint64_t node_bytes =
      totals.nodes * node_block_bytes_.load(std::memory_order_relaxed);
  std::vector<EngineStat> out = {
      {"engine", std::string(kWortEngineName)},
      {"persistent", "yes"},
      {"keys", std::to_string(size())},
      {"nodes", std::to_string(totals.nodes)},
      {"node_bytes", std::to_string(node_bytes)},
      {"bytes_per_key", format_ratio(node_bytes, totals.leaves)},
      {"leaf_depth_avg", format_ratio(totals.leaf_depth_sum, totals.leaves)},
  };
  append_persist_stats(out);
  return out;
}

// recover(): Algorithm 2 over the whole tree (radix::repair_depths); an emptied root is unlinked.
void WortEngine::recover() {
  pm::OpScope scope(pm::OpKind::kRecovery);
  std::unique_lock lock(mutex_);
  radix::validate_structure(nodes_, root(), region_->size());
  if (root() != 0) {
    radix::repair_depths(nodes_, root_field_, 0, /*is_root=*/true);
    const Node* r = node(root());
    bool empty = r->end_slot == 0;
    for (std::uint64_t child : r->children) empty = empty && child == 0;
    if (empty) region_->store_u64_persist(root_field_, 0);  // unreachable nodes are free
  }
  recount();
}

void WortEngine::recount() {
  radix::WalkTotals totals;
  radix::walk(nodes_, root(), 0, totals, [](std::uint64_t) {});
  keys_.store(totals.leaves, std::memory_order_relaxed);
}

void WortEngine::for_each_block(const std::function<void(std::uint64_t offset)>& visit) const {
  std::shared_lock lock(mutex_);
  radix::WalkTotals totals;
  radix::walk(nodes_, root(), 0, totals, visit);
}

}  // namespace wort

std::unique_ptr<IndexEngine> make_wort_engine(const EngineContext& context) {
  return std::make_unique<wort::WortEngine>(context);
}

}  // namespace pmcached::engine

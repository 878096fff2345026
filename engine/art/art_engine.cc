// ArtEngine: construction, node building, lookup, scan, stats and recovery. See art_engine.h.
#include <array>
#include <mutex>

#include "engine/art/art_tree.h"
#include "engine/engine_stats.h"
#include "engine/pm/persistence.h"
#include "engine/radix/fault_injection.h"
#include "engine/radix/radix_tree.h"

namespace pmcached::engine {
namespace art {

ArtEngine::ArtEngine(const EngineContext& context, bool cow)
    : cow_(cow),
      pool_(context.pool),
      allocator_(context.allocator),
      nodes_(nullptr, context.key_of, /*stores_depth=*/!cow) {
  if (pool_ == nullptr || allocator_ == nullptr) {
    own_pool_ = pm::Pool::open_region(pm::PmRegion::in_memory(kPrivatePoolBytes), name());
    own_allocator_ = std::make_unique<pm::Allocator>(own_pool_->region(), own_pool_->heap_begin(),
                                                     own_pool_->heap_end());
    pool_ = own_pool_.get();
    allocator_ = own_allocator_.get();
  }
  region_ = &pool_->region();
  root_field_ = pool_->root_field();
  nodes_ = ArtNodes(region_, context.key_of, /*stores_depth=*/!cow);
  // Never walk a wild reference: a corrupt pool throws here, before anything trusts it.
  radix::validate_structure(nodes_, root(), region_->size());
  recount();
}

ArtEngine::~ArtEngine() = default;

std::uint64_t ArtEngine::build(NodeType type, Header h, std::uint64_t end,
                               const Entries& children) noexcept {
  const std::size_t bytes = type_info(type).bytes;
  const std::uint64_t offset = allocator_->allocate(bytes, pm::BlockUse::kIndex);
  if (offset == 0) return 0;
  nodes_.fill(offset, type, h, end, children);
  if (!radix::FaultInjection::skip_new_node_flush) region_->flush(nodes_.base(offset), bytes);
  return offset;
}

bool ArtEngine::rebuild(std::uint64_t* slot, std::uint64_t old, NodeType type, Header h,
                        std::uint64_t end, const Entries& children) noexcept {
  const std::uint64_t fresh = build(type, h, end, children);
  if (fresh == 0) return false;
  region_->fence();
  nodes_.commit(slot, fresh);
  allocator_->free(old);
  return true;
}

ItemRef ArtEngine::lookup(std::string_view key) const noexcept {
  std::shared_lock lock(mutex_);
  return radix::leaf_item(radix::find_leaf(nodes_, root(), key));
}

void ArtEngine::scan(std::string_view from,
                     const std::function<bool(std::string_view key, ItemRef ref)>& visit) const {
  std::shared_lock lock(mutex_);
  const std::uint64_t r = root();
  if (r != 0) radix::scan_from(nodes_, r, 0, !from.empty(), from, visit);
}

std::vector<EngineStat> ArtEngine::stats() const {
  radix::WalkTotals totals;
  std::array<std::uint64_t, 5> by_type{};
  std::uint64_t node_bytes = 0;
  {
    std::shared_lock lock(mutex_);
    radix::walk(nodes_, root(), 0, totals, [&](std::uint64_t node) {
      ++by_type[static_cast<std::size_t>(nodes_.type(node))];
      node_bytes += allocator_->block_size(node);
    });
  }
  std::vector<EngineStat> out = {
      {"engine", std::string(name())},
      {"persistent", "yes"},
      {"keys", std::to_string(size())},
      {"nodes", std::to_string(totals.nodes)},
  };
  for (NodeType type : {NodeType::kN4, NodeType::kN16, NodeType::kN48, NodeType::kN256}) {
    out.push_back({std::string("nodes_") + type_info(type).name,
                   std::to_string(by_type[static_cast<std::size_t>(type)])});
  }
  out.push_back({"node_bytes", std::to_string(node_bytes)});
  out.push_back({"bytes_per_key", format_ratio(node_bytes, totals.leaves)});
  out.push_back({"leaf_depth_avg", format_ratio(totals.leaf_depth_sum, totals.leaves)});
  append_persist_stats(out);
  return out;
}

// woart: Algorithm 2 over the whole tree (radix::repair_depths). artcow: no operation leaves
// anything to repair, so recovery only validates. Both unlink an emptied root.
void ArtEngine::recover() {
  pm::OpScope scope(pm::OpKind::kRecovery);
  std::unique_lock lock(mutex_);
  radix::validate_structure(nodes_, root(), region_->size());
  if (root() != 0) {
    if (nodes_.stores_depth()) radix::repair_depths(nodes_, root_field_, 0, /*is_root=*/true);
    if (*nodes_.end_slot(root()) == 0 && nodes_.child_count(root()) == 0) {
      nodes_.commit(root_field_, 0);  // unreachable nodes are free
    }
  }
  recount();
}

void ArtEngine::recount() {
  radix::WalkTotals totals;
  radix::walk(nodes_, root(), 0, totals, [](std::uint64_t) {});
  keys_.store(totals.leaves, std::memory_order_relaxed);
}

void ArtEngine::for_each_block(const std::function<void(std::uint64_t offset)>& visit) const {
  std::shared_lock lock(mutex_);
  radix::WalkTotals totals;
  radix::walk(nodes_, root(), 0, totals, visit);
}

}  // namespace art

std::unique_ptr<IndexEngine> make_woart_engine(const EngineContext& context) {
  return std::make_unique<art::ArtEngine>(context, /*cow=*/false);
}

std::unique_ptr<IndexEngine> make_artcow_engine(const EngineContext& context) {
  return std::make_unique<art::ArtEngine>(context, /*cow=*/true);
}

}  // namespace pmcached::engine

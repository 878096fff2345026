// WortEngine: construction, node helpers, lookup, scan and stats. See wort_engine.h.
#include "engine/wort/wort_engine.h"

#include <cstdio>
#include <cstring>
#include <mutex>

#include "engine/pm/persistence.h"
#include "engine/wort/wort_tree.h"

namespace pmcached::engine {
namespace wort {
namespace {

std::string format_ratio(std::uint64_t numerator, std::uint64_t denominator) {
  if (denominator == 0) return "0";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f",
                static_cast<double>(numerator) / static_cast<double>(denominator));
  return buffer;
}

}  // namespace

WortEngine::WortEngine(const EngineContext& context)
    : key_of_(context.key_of), pool_(context.pool), allocator_(context.allocator) {
  if (pool_ == nullptr || allocator_ == nullptr) {
    own_pool_ = pm::Pool::open_region(pm::PmRegion::in_memory(kPrivatePoolBytes), kWortEngineName);
    own_allocator_ = std::make_unique<pm::Allocator>(own_pool_->region(), own_pool_->heap_begin(),
                                                     own_pool_->heap_end());
    pool_ = own_pool_.get();
    allocator_ = own_allocator_.get();
  }
  region_ = &pool_->region();
  root_field_ = pool_->root_field();
  if (root() != 0) validate_structure();  // never walk a wild reference
  recount();
}

WortEngine::~WortEngine() = default;

std::string_view WortEngine::name() const noexcept { return kWortEngineName; }

std::uint64_t WortEngine::root() const noexcept {
  return __atomic_load_n(root_field_, __ATOMIC_RELAXED);
}

std::string_view WortEngine::any_leaf_key(std::uint64_t ref) const {
  while (ref != 0 && !is_leaf(ref)) {
    const Node* n = node(ref);
    std::uint64_t next = n->end_slot;
    for (unsigned i = 0; next == 0 && i < kFanout; ++i) next = n->children[i];
    ref = next;
  }
  return ref == 0 ? std::string_view() : leaf_key(ref);
}

std::uint64_t WortEngine::new_node(Header h) noexcept {
  const std::uint64_t offset = allocator_->allocate(sizeof(Node));
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
  if (!FaultInjection::skip_new_node_flush) region_->flush(node(offset), sizeof(Node));
}

void WortEngine::free_node(std::uint64_t offset) noexcept { allocator_->free(offset); }

ItemRef WortEngine::lookup(std::string_view key) const noexcept {
  std::shared_lock lock(mutex_);
  const std::size_t key_nibbles = nibble_count(key);
  std::uint64_t ref = root();
  while (ref != 0) {
    if (is_leaf(ref)) return leaf_key(ref) == key ? leaf_item(ref) : kNoItem;
    Node* n = node(ref);
    const Header h = header_of(n);
    // Positions are absolute, so a node whose depth is ahead of its path (a crash before
    // Algorithm 2 ran) is still navigated right; the nibbles it skips are checked at the leaf.
    if (key_nibbles < h.branch()) return kNoItem;
    for (unsigned j = 0; j < h.stored(); ++j) {
      if (nibble(key, h.depth + j) != h.nibble(j)) return kNoItem;
    }
    const unsigned next = key_nibbles == h.branch() ? 0 : nibble(key, h.branch());
    ref = *slot_for(n, h.branch(), key_nibbles, next);
  }
  return kNoItem;
}

void WortEngine::scan(std::string_view from,
                      const std::function<bool(std::string_view key, ItemRef ref)>& visit) const {
  std::shared_lock lock(mutex_);
  const std::uint64_t r = root();
  if (r != 0) scan_ref(r, 0, !from.empty(), from, visit);
}

// In-order visit of the subtree at `ref`, whose path so far covers nibbles [0, implied).
// `bounded`: that path equals `from`'s first `implied` nibbles, so keys below may be < from.
bool WortEngine::scan_ref(std::uint64_t ref, std::uint32_t implied, bool bounded,
                          std::string_view from,
                          const std::function<bool(std::string_view, ItemRef)>& visit) const {
  if (is_leaf(ref)) {
    const std::string_view key = leaf_key(ref);
    if (bounded && key < from) return true;
    return visit(key, leaf_item(ref));
  }
  const Node* n = node(ref);
  const std::uint32_t branch = header_of(n).branch();
  const std::size_t from_nibbles = nibble_count(from);
  if (bounded && implied < branch) {
    // Compare the compressed part with `from`, using a leaf for the real nibbles.
    const std::string_view sample = any_leaf_key(ref);
    if (nibble_count(sample) < branch) return true;  // unreachable in a valid tree
    for (std::uint32_t pos = implied; pos < branch && bounded; ++pos) {
      if (pos >= from_nibbles) {
        bounded = false;  // `from` is a prefix of every key below
        break;
      }
      const unsigned a = nibble(sample, pos);
      const unsigned f = nibble(from, pos);
      if (a < f) return true;  // the whole subtree is < from
      if (a > f) bounded = false;
    }
  }
  if (bounded && from_nibbles == branch) bounded = false;  // the END key equals `from`
  // Still bounded: from is longer than the END key, which is therefore < from.
  if (n->end_slot != 0 && !bounded) {
    if (!scan_ref(n->end_slot, branch, false, from, visit)) return false;
  }
  const unsigned first = bounded ? nibble(from, branch) : 0;
  for (unsigned i = first; i < kFanout; ++i) {
    const std::uint64_t child = n->children[i];
    if (child == 0) continue;
    if (!scan_ref(child, branch + 1, bounded && i == first, from, visit)) return false;
  }
  return true;
}

std::vector<EngineStat> WortEngine::stats() const {
  WalkTotals totals;
  {
    std::shared_lock lock(mutex_);
    const std::uint64_t r = root();
    if (r != 0) {
      walk(r, 0, totals, nullptr);
      if (node_block_bytes_.load(std::memory_order_relaxed) == 0) {
        node_block_bytes_.store(allocator_->block_size(r), std::memory_order_relaxed);
      }
    }
  }
  std::vector<EngineStat> out = {
      {"engine", std::string(kWortEngineName)},
      {"persistent", "yes"},
      {"keys", std::to_string(size())},
      {"nodes", std::to_string(totals.nodes)},
      {"node_bytes",
       std::to_string(totals.nodes * node_block_bytes_.load(std::memory_order_relaxed))},
      {"leaf_depth_avg", format_ratio(totals.leaf_depth_sum, totals.leaves)},
  };
  const pm::PersistTotals persist = pm::totals();
  for (pm::OpKind kind : {pm::OpKind::kInsert, pm::OpKind::kUpdate, pm::OpKind::kDelete}) {
    const pm::OpCounters& c = persist.by_kind[static_cast<std::size_t>(kind)];
    const std::string suffix(pm::op_kind_name(kind));
    out.push_back({"flushes_per_" + suffix, format_ratio(c.lines_flushed, c.operations)});
    out.push_back({"fences_per_" + suffix, format_ratio(c.fences, c.operations)});
  }
  return out;
}

}  // namespace wort

std::unique_ptr<IndexEngine> make_wort_engine(const EngineContext& context) {
  return std::make_unique<wort::WortEngine>(context);
}

}  // namespace pmcached::engine

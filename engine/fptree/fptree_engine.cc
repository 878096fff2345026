// FpTreeEngine: start-up (log replay, inner rebuild), lookup, scan and stats. See
// fptree_factory.h.
#include "engine/fptree/fptree_engine.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>

#include "engine/engine_stats.h"
#include "engine/fptree/fptree_factory.h"
#include "engine/pm/persistence.h"

namespace pmcached::engine {
namespace fptree {

FpTreeEngine::FpTreeEngine(const EngineContext& context)
    : BTreeEngine(context, kFpTreeEngineName, kMetaMagic) {}

std::string_view FpTreeEngine::name() const noexcept { return kFpTreeEngineName; }

std::uint64_t FpTreeEngine::first_leaf() const noexcept {
  const btree::Meta* m = meta();
  return m == nullptr ? 0 : m->root;
}

ItemRef FpTreeEngine::lookup(std::string_view key) const noexcept {
  std::shared_lock lock(mutex_);
  const std::uint64_t offset = inner_.find(key);
  if (offset == 0) return kNoItem;
  const Leaf& l = *leaf(offset);
  const int slot = find_slot(l, key, fingerprint(key), key_of_);
  return slot < 0 ? kNoItem : l.refs[slot];
}

void FpTreeEngine::scan(std::string_view from,
                        const std::function<bool(std::string_view key, ItemRef ref)>& visit) const {
  std::shared_lock lock(mutex_);
  std::vector<btree::KeyedRef> entries;
  for (std::uint64_t offset = inner_.find(from); offset != 0; offset = leaf(offset)->next) {
    entries.clear();
    collect(*leaf(offset), key_of_, entries);
    if (!btree::visit_sorted(entries, from, visit)) return;
  }
}

std::vector<std::uint64_t> FpTreeEngine::checked_chain() const {
  std::vector<std::uint64_t> chain;
  const std::uint64_t most = (pool_->heap_end() - pool_->heap_begin()) / sizeof(Leaf);
  for (std::uint64_t offset = first_leaf(); offset != 0; offset = leaf(offset)->next) {
    if (!in_heap(offset, sizeof(Leaf)) || (leaf(offset)->bitmap & ~kAllSlots) != 0 ||
        chain.size() > most) {
      throw std::runtime_error("pool is corrupt: fptree leaf at pool offset " +
                               std::to_string(offset) + " is not one");
    }
    const Leaf& l = *leaf(offset);
    for (std::uint64_t bits = l.bitmap; bits != 0; bits &= bits - 1) {
      if (!in_heap(l.refs[std::countr_zero(bits)], 1)) {
        throw std::runtime_error("pool is corrupt: fptree leaf at pool offset " +
                                 std::to_string(offset) + " refers outside the heap");
      }
    }
    chain.push_back(offset);
  }
  return chain;
}

void FpTreeEngine::recover() {
  pm::OpScope scope(pm::OpKind::kRecovery);
  std::unique_lock lock(mutex_);
  const auto started = std::chrono::steady_clock::now();
  if (meta() != nullptr) replay_split_log();
  std::vector<std::uint64_t> chain = checked_chain();
  unlink_empty_leaves(chain);
  rebuild_inner(chain);
  startup_rebuild_us_ =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                     std::chrono::steady_clock::now() - started)
                                     .count());
}

// By position: each entry's bit is cleared (one persisted store, as erase() does), then leaves
// left empty are unlinked and freed and the inner nodes rebuilt, since a damaged key may have
// been a leaf's bound (routing a whole range astray).
std::vector<ItemRef> FpTreeEngine::drop_corrupt(const std::vector<ItemRef>& corrupt) {
  pm::OpScope scope(pm::OpKind::kRecovery);
  std::unique_lock lock(mutex_);
  std::vector<ItemRef> wanted = corrupt;
  std::sort(wanted.begin(), wanted.end());
  std::vector<ItemRef> removed;
  std::vector<std::uint64_t> chain = checked_chain();
  for (std::uint64_t offset : chain) {
    Leaf& l = *leaf(offset);
    for (std::uint64_t live = l.bitmap & kAllSlots; live != 0; live &= live - 1) {
      const int slot = std::countr_zero(live);
      if (!std::binary_search(wanted.begin(), wanted.end(), l.refs[slot])) continue;
      removed.push_back(l.refs[slot]);
      region_->store_u64_persist(&l.bitmap, l.bitmap & ~(std::uint64_t{1} << slot));
    }
  }
  if (removed.empty()) return removed;
  const std::vector<std::uint64_t> before = chain;
  unlink_empty_leaves(chain);
  for (std::uint64_t offset : before) {
    if (std::find(chain.begin(), chain.end(), offset) == chain.end()) {
      allocator_->free(offset);
    }
  }
  rebuild_inner(chain);  // counts the keys anew
  return removed;
}

// The micro-log (fptree_factory.h): a split that never became visible is dropped, one that did
// is finished. Nothing here allocates or frees: unreachable blocks are the allocator's to free.
void FpTreeEngine::replay_split_log() noexcept {
  btree::Meta& m = *meta();
  const std::uint64_t full = m.log[0];
  const std::uint64_t fresh = m.log[1];
  if (full == 0 && fresh == 0) return;
  ++log_replays_;
  if (full != 0 && fresh != 0 && in_heap(full, sizeof(Leaf)) && in_heap(fresh, sizeof(Leaf)) &&
      leaf(full)->next == fresh) {
    Leaf& l = *leaf(full);
    region_->store_u64_persist(&l.bitmap, l.bitmap & ~leaf(fresh)->bitmap);
  }
  m.log[0] = 0;
  m.log[1] = 0;
  region_->persist(&m.log[0], 2 * sizeof(std::uint64_t));
}

// An erase persists the empty bitmap before it unlinks the leaf; a crash between the two
// leaves an empty leaf in the chain.
void FpTreeEngine::unlink_empty_leaves(std::vector<std::uint64_t>& chain) noexcept {
  std::vector<std::uint64_t> kept;
  for (std::uint64_t offset : chain) {
    if ((leaf(offset)->bitmap & kAllSlots) != 0) {
      kept.push_back(offset);
      continue;
    }
    std::uint64_t* link = kept.empty() ? &meta()->root : &leaf(kept.back())->next;
    region_->store_u64_persist(link, leaf(offset)->next);
  }
  chain = std::move(kept);
}

// A leaf's bound is its smallest key; the chain gives the order.
void FpTreeEngine::rebuild_inner(const std::vector<std::uint64_t>& chain) {
  std::vector<std::pair<std::string, std::uint64_t>> leaves;
  leaves.reserve(chain.size());
  std::size_t keys = 0;
  std::vector<btree::KeyedRef> entries;
  for (std::uint64_t offset : chain) {
    entries.clear();
    collect(*leaf(offset), key_of_, entries);
    std::string_view lowest = entries.front().key;
    for (const btree::KeyedRef& e : entries) lowest = std::min(lowest, e.key);
    leaves.emplace_back(std::string(lowest), offset);
    keys += entries.size();
  }
  inner_.build(leaves);
  keys_.store(keys, std::memory_order_relaxed);
}

void FpTreeEngine::visit_blocks(const std::function<void(std::uint64_t offset)>& visit) const {
  for (std::uint64_t offset = first_leaf(); offset != 0; offset = leaf(offset)->next) {
    visit(offset);
  }
}

btree::TreeFigures FpTreeEngine::figures() const {
  btree::TreeFigures f;
  std::uint64_t leaves = 0;
  if (pool_->root() != 0) f.node_bytes += allocator_->block_size(pool_->root());
  for (std::uint64_t offset = first_leaf(); offset != 0; offset = leaf(offset)->next) {
    ++leaves;
    f.node_bytes += allocator_->block_size(offset);
  }
  f.nodes_by_type = {{"leaf", leaves}};
  f.dram_bytes = inner_.bytes();
  f.leaf_depth_sum = size() * (inner_.height() + 1);
  return f;
}

void FpTreeEngine::extra_stats(std::vector<EngineStat>& out) const {
  out.push_back({"leaf_slots", std::to_string(kLeafSlots)});
  out.push_back({"inner_fanout", std::to_string(InnerTree::kFanout)});
  out.push_back({"inner_levels", std::to_string(inner_.height())});
  out.push_back({"inner_nodes_dram", std::to_string(inner_.nodes())});
  out.push_back({"leaf_splits", std::to_string(leaf_splits_)});
  out.push_back({"log_replays", std::to_string(log_replays_)});
  out.push_back({"startup_rebuild_us", std::to_string(startup_rebuild_us_)});
}

}  // namespace fptree

std::unique_ptr<IndexEngine> make_fptree_engine(const EngineContext& context) {
  return std::make_unique<fptree::FpTreeEngine>(context);
}

}  // namespace pmcached::engine

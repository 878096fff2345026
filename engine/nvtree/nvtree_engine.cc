// NvTreeEngine: construction, lookup, scan, start-up rebuild and the figures of `stats engine`.
// See nvtree_factory.h for the design, nvtree_update.cc for the writes.
#include "engine/nvtree/nvtree_engine.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <utility>

#include "engine/pm/persistence.h"

namespace pmcached::engine::nvtree {
namespace {

[[noreturn]] void corrupt(const std::string& what) {
  throw std::runtime_error("pool is corrupt: nvtree " + what);
}

std::int64_t elapsed_us(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               since)
      .count();
}

}  // namespace

NvTreeEngine::NvTreeEngine(const EngineContext& context)
    : BTreeEngine(context, kNvTreeEngineName, kMetaMagic) {}

ItemRef NvTreeEngine::lookup(std::string_view key) const noexcept {
  const std::uint64_t tag = btree::key_tag(key);
  std::shared_lock lock(mutex_);
  if (inner_.empty()) return kNoItem;
  const Leaf& l = *leaf(inner_.leaf(inner_.locate(key)));
  const unsigned j = find(l, key, tag);
  return j == kNotFound ? kNoItem : btree::ref_of(l.entries[j]);
}

void NvTreeEngine::scan(std::string_view from,
                        const std::function<bool(std::string_view key, ItemRef ref)>& visit) const {
  std::shared_lock lock(mutex_);
  if (inner_.empty()) return;
  std::vector<btree::KeyedRef> entries;
  entries.reserve(kLeafEntries);
  for (std::uint64_t offset = inner_.leaf(inner_.locate(from)); offset != 0;) {
    const Leaf& l = *leaf(offset);
    entries.clear();
    for (std::uint64_t live = live_mask(l); live != 0; live &= live - 1) {
      const ItemRef ref = btree::ref_of(l.entries[std::countr_zero(live)]);
      entries.push_back({key_of(ref), ref});
    }
    if (!btree::visit_sorted(entries, from, visit)) return;
    offset = l.next;
  }
}

void NvTreeEngine::recover() {
  pm::OpScope scope(pm::OpKind::kRecovery);
  std::unique_lock lock(mutex_);
  const auto started = std::chrono::steady_clock::now();
  std::size_t keys = 0;
  inner_.build(validate_chain(keys));
  keys_.store(keys, std::memory_order_relaxed);
  startup_rebuild_us_.store(static_cast<std::uint64_t>(elapsed_us(started)),
                            std::memory_order_relaxed);
}

// By position, as erase() does: an entry is killed in place (one persisted store naming itself,
// nvtree_leaf.h), or, when every live entry of its leaf goes, the leaf is unlinked with one store
// instead (a reachable leaf always has a live entry) and freed. The inner array is then rebuilt
// from the chain, since a damaged key may have been a leaf's bound (routing a range astray).
std::vector<ItemRef> NvTreeEngine::drop_corrupt(const std::vector<ItemRef>& corrupt) {
  pm::OpScope scope(pm::OpKind::kRecovery);
  std::unique_lock lock(mutex_);
  std::vector<ItemRef> wanted = corrupt;
  std::sort(wanted.begin(), wanted.end());
  const auto is_wanted = [&](std::uint64_t entry) {
    return std::binary_search(wanted.begin(), wanted.end(), btree::ref_of(entry));
  };
  std::vector<ItemRef> removed;
  btree::Meta* m = meta();
  if (m == nullptr) return removed;
  std::uint64_t* link = &m->root;
  while (*link != 0) {
    const std::uint64_t offset = *link;
    Leaf& l = *leaf(offset);
    std::uint64_t doomed = 0;
    for (std::uint64_t live = live_mask(l); live != 0; live &= live - 1) {
      const unsigned j = static_cast<unsigned>(std::countr_zero(live));
      if (is_wanted(l.entries[j])) doomed |= std::uint64_t{1} << j;
    }
    for (std::uint64_t d = doomed; d != 0; d &= d - 1) {
      removed.push_back(btree::ref_of(l.entries[std::countr_zero(d)]));
    }
    if (doomed != 0 && doomed == live_mask(l)) {
      region_->store_u64_persist(link, l.next);
      allocator_->free(offset);
      continue;
    }
    for (std::uint64_t d = doomed; d != 0; d &= d - 1) {
      const unsigned j = static_cast<unsigned>(std::countr_zero(d));
      region_->store_u64_persist(&l.entries[j], negative(j));
    }
    link = &l.next;
  }
  if (!removed.empty()) {
    std::size_t keys = 0;
    inner_.build(validate_chain(keys));
    keys_.store(keys, std::memory_order_relaxed);
  }
  return removed;
}

// Every leaf is checked before its entries or its next word are trusted; the walk is bounded by
// the leaves the heap could hold and stops at the first leaf seen twice.
std::vector<InnerArray::Entry> NvTreeEngine::validate_chain(std::size_t& keys) const {
  std::vector<InnerArray::Entry> list;
  keys = 0;
  const btree::Meta* m = meta();
  if (m == nullptr) return list;
  const std::size_t max_leaves = (pool_->heap_end() - pool_->heap_begin()) / sizeof(Leaf);
  std::unordered_set<std::uint64_t> seen;
  for (std::uint64_t offset = m->root; offset != 0;) {
    const std::string where = "leaf at pool offset " + std::to_string(offset);
    if (!in_heap(offset, sizeof(Leaf))) corrupt(where + " is outside the heap");
    if (!seen.insert(offset).second) corrupt(where + " is reached twice (a cycle)");
    if (seen.size() > max_leaves) corrupt("leaf chain is longer than the heap could hold");
    const Leaf& l = *leaf(offset);
    if (std::string problem = leaf_problem(l); !problem.empty()) corrupt(where + ": " + problem);
    std::string_view smallest;
    bool first = true;
    for (std::uint64_t live = live_mask(l); live != 0; live &= live - 1) {
      // A key that does not match its entry's tag is an item torn or damaged in its key: the
      // store's checksum pass drops such items, so it is not the index's to refuse.
      const std::string_view k = key_of(btree::ref_of(l.entries[std::countr_zero(live)]));
      if (first || k < smallest) smallest = k;
      first = false;
      ++keys;
    }
    list.push_back({list.empty() ? std::string() : std::string(smallest), offset});
    offset = l.next;
  }
  return list;
}

void NvTreeEngine::visit_blocks(const std::function<void(std::uint64_t offset)>& visit) const {
  const btree::Meta* m = meta();
  if (m == nullptr) return;
  for (std::uint64_t offset = m->root; offset != 0; offset = leaf(offset)->next) visit(offset);
}

btree::TreeFigures NvTreeEngine::figures() const {
  btree::TreeFigures f;
  const std::uint64_t leaves = inner_.leaf_count();
  f.nodes_by_type = {{"leaf", leaves}};
  f.node_bytes = leaves * allocator_->rounded_size(sizeof(Leaf), pm::BlockUse::kIndex);
  if (meta() != nullptr) {
    f.node_bytes += allocator_->rounded_size(sizeof(btree::Meta), pm::BlockUse::kIndex);
  }
  f.dram_bytes = inner_.bytes();
  f.leaf_depth_sum = keys_.load(std::memory_order_relaxed) * (inner_.levels() + 1);
  return f;
}

void NvTreeEngine::extra_stats(std::vector<EngineStat>& out) const {
  const auto put = [&out](const char* name, const std::atomic<std::uint64_t>& v) {
    out.push_back({name, std::to_string(v.load(std::memory_order_relaxed))});
  };
  put("leaf_splits", leaf_splits_);
  put("leaf_compactions", leaf_compactions_);
  put("inner_rebuilds", inner_rebuilds_);
  out.push_back({"inner_rebuild_us",
                 std::to_string(inner_rebuild_ns_.load(std::memory_order_relaxed) / 1000)});
  put("startup_rebuild_us", startup_rebuild_us_);
}

}  // namespace pmcached::engine::nvtree

namespace pmcached::engine {

std::unique_ptr<IndexEngine> make_nvtree_engine(const EngineContext& context) {
  return std::make_unique<nvtree::NvTreeEngine>(context);
}

}  // namespace pmcached::engine

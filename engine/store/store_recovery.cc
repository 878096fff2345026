// Store::recover(): bringing a persistent pool back into service after a start or a crash.
//
// Order: the engine repairs itself (e.g. WORT's header repair); the allocator rebuilds from
// what is reachable (the engine's nodes, then every indexed item that is intact); corrupt items
// (checksum failures) are unlinked and reported, while a broken structure (an index reference
// that is not an allocated block) makes recover() throw, so the pool is refused, not served; the
// cas counter resumes above both the persisted high-water mark and every item's cas; the flush_all
// state is restored from the superblock.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/pm/allocator.h"
#include "engine/pm/persistence.h"
#include "engine/pm/pool.h"
#include "engine/store/store_impl.h"

namespace pmcached::engine {
namespace {

std::string describe(std::uint64_t offset, std::string_view why) {
  return "item at pool offset " + std::to_string(offset) + " " + std::string(why) + "; dropped";
}

}  // namespace

// A record engine: the allocator keeps only the engine's log blocks; the engine replays its log;
// the store counts what it finds and restores its cas counter and flush_all state.
RecoveryReport Store::Impl::recover_records() {
  Impl& s = *this;
  pm::Allocator& allocator = *records_allocator;
  RecoveryReport report;
  const auto started = std::chrono::steady_clock::now();
  pm::OpScope scope(pm::OpKind::kRecovery);
  allocator.begin_rebuild();
  s.records->for_each_block([&](std::uint64_t offset) {
    if (allocator.mark_reachable(offset, pm::BlockUse::kIndex)) ++report.index_blocks;
  });
  allocator.finish_rebuild();
  s.records->recover();
  std::uint64_t max_cas = 0;
  s.records->scan("", sizeof(ItemHeader), [&](std::string_view, std::span<const std::byte> head) {
    if (head.size() < sizeof(ItemHeader)) return true;
    ItemHeader header;
    std::memcpy(&header, head.data(), sizeof header);
    ++report.items_recovered;
    report.bytes_live += header.record_size();
    if (header.cas > max_cas) max_cas = header.cas;
    return true;
  });
  s.used_bytes.store(report.bytes_live, std::memory_order_relaxed);
  s.stripes.for_key("").add(Counter::kCurrItems, report.items_recovered);
  std::uint64_t next = std::max(max_cas, std::max(s.pool->cas_high_water(), s.pool->flush_cas()));
  s.flush_state.flush(s.pool->flush_time(), s.pool->flush_cas());
  s.cas_counter.store(next, std::memory_order_relaxed);
  s.cas_reserved.store(0, std::memory_order_relaxed);
  report.time_us = std::chrono::duration_cast<std::chrono::microseconds>(
                       std::chrono::steady_clock::now() - started)
                       .count();
  return report;
}

RecoveryReport Store::recover() {
  Impl& s = *impl_;
  if (s.records) {
    if (s.pool == nullptr || s.records->capabilities().persistent == false) return {};
    return s.recover_records();
  }
  RecoveryReport report;
  if (s.heap.allocator() == nullptr) return report;  // a volatile store keeps nothing
  pm::Allocator& allocator = *s.heap.allocator();
  const auto started = std::chrono::steady_clock::now();
  pm::Pool* pool = s.heap.pool();
  pm::OpScope scope(pm::OpKind::kRecovery);

  s.engine->recover();
  allocator.begin_rebuild();
  // A broken index structure cannot be repaired item by item: the pool is refused.
  std::string structural;
  s.engine->for_each_block([&](std::uint64_t offset) {
    if (allocator.mark_reachable(offset, pm::BlockUse::kIndex)) {
      ++report.index_blocks;
    } else if (structural.empty()) {
      structural =
          "index node at pool offset " + std::to_string(offset) + " is not an allocated block";
    }
  });

  // Check every indexed item. A reference outside the allocator's blocks, or a record that
  // does not fit its block, is not read further; a record whose checksum fails is unlinked.
  std::uint64_t max_cas = 0;
  std::uint64_t charged = 0;  // what the items take in the heap (the memory limit's unit)
  std::vector<std::uint64_t> corrupt_blocks;              // marked blocks of corrupt items
  std::vector<std::pair<std::uint64_t, ItemRef>> intact;  // (cas, ref): the recency order
  s.engine->scan("", [&](std::string_view /*key*/, ItemRef ref) {
    if (!s.heap.plausible(ref) || !allocator.mark_reachable(ref)) {
      if (structural.empty()) {
        structural =
            "the index refers to pool offset " + std::to_string(ref) + ", which is not an item";
      }
      return false;
    }
    const ItemHeader* item = s.heap.item(ref);
    if (item->record_size() > allocator.block_size(ref) || !item_intact(*item)) {
      report.problems.push_back(describe(ref, "fails its checksum"));
      ++report.items_dropped;
      corrupt_blocks.push_back(ref);
      return true;
    }
    ++report.items_recovered;
    report.bytes_live += item->record_size();
    charged += s.footprint(*item);
    intact.emplace_back(item->cas, ref);
    if (item->cas > max_cas) max_cas = item->cas;
    return true;
  });
  if (!structural.empty()) {
    throw std::runtime_error("pool is corrupt: " + structural);
  }

  // Unlink corrupt items, once the allocator is rebuilt (an engine may allocate and free nodes
  // to erase). The engine finds them by reference: the key read from a corrupt record may itself
  // be damaged, and a damaged key can be another item's (key009674 -> key009774), so erasing by
  // it could unlink an intact item. A block is freed only if its item really left the index; one
  // the engine could not remove stays in the index, unreachable by any get, and is logged.
  allocator.finish_rebuild();
  if (!corrupt_blocks.empty()) {
    std::vector<ItemRef> removed = s.engine->drop_corrupt(corrupt_blocks);
    std::sort(removed.begin(), removed.end());
    for (ItemRef ref : corrupt_blocks) {
      if (std::binary_search(removed.begin(), removed.end(), ref)) {
        allocator.free(ref);
      } else {
        report.problems.push_back("item at pool offset " + std::to_string(ref) +
                                  " could not be unlinked; it stays unreachable");
      }
    }
  }

  // The recency lists are volatile: rebuilt with the oldest cas (the oldest store) least recent.
  std::sort(intact.begin(), intact.end());
  for (const auto& [cas, ref] : intact) s.recency.push(ref, cas);

  s.used_bytes.store(charged, std::memory_order_relaxed);
  s.stripes.for_key("").add(Counter::kCurrItems, report.items_recovered);
  std::uint64_t next = max_cas;
  if (pool != nullptr) {
    if (pool->cas_high_water() > next) next = pool->cas_high_water();
    if (pool->flush_cas() > next) next = pool->flush_cas();
    s.flush_state.flush(pool->flush_time(), pool->flush_cas());
  }
  s.cas_counter.store(next, std::memory_order_relaxed);
  s.cas_reserved.store(0, std::memory_order_relaxed);  // the next cas persists a new mark
  report.time_us = std::chrono::duration_cast<std::chrono::microseconds>(
                       std::chrono::steady_clock::now() - started)
                       .count();
  return report;
}

}  // namespace pmcached::engine

// Store::Impl: record lifetime, memory accounting, eviction by recency and statistics.
#include <algorithm>
#include <cassert>
#include <cstring>
#include <initializer_list>
#include <new>
#include <vector>

#include "engine/pm/fault_injection.h"
#include "engine/pm/persistence.h"
#include "engine/pm/pool.h"
#include "engine/store/store_impl.h"

namespace pmcached::engine {

Store::Impl::Impl(std::unique_ptr<IndexEngine> index, std::unique_ptr<RecordEngine> owner,
                  std::unique_ptr<ItemHeap> own_heap, ItemHeap& item_heap,
                  pm::Pool* persistent_pool, const Clock& time_source, StoreOptions opts)
    : owned_heap(std::move(own_heap)),
      heap(item_heap),
      engine(std::move(index)),
      records(std::move(owner)),
      pool(persistent_pool),
      clock(time_source),
      options(opts),
      stripes(opts.lock_stripes),
      recency(item_heap),
      class_counters(item_heap.class_count()),
      process_started(time_source.now() - 62),
      memory_limit(opts.memory_limit_bytes) {
  // A persistent store persists a cas high-water mark before handing out its first cas.
  if (pool != nullptr) cas_reserved.store(0, std::memory_order_relaxed);
}

void Store::Impl::reserve_cas(std::uint64_t cas) noexcept {
  if (pool == nullptr) return;
  std::lock_guard lock(cas_mutex);
  if (cas < cas_reserved.load(std::memory_order_relaxed)) return;  // another thread did it
  const std::uint64_t mark = cas + kCasBatch;
  pool->set_cas_high_water(mark);
  cas_reserved.store(mark, std::memory_order_release);
}

Store::Impl::~Impl() {
  // A persistent heap keeps its records: they are the data that the next start recovers. A
  // record engine owns its own.
  if (heap.pool() != nullptr || records) return;
  // Collect first, free after the engine is gone: an engine may read keys through records.
  std::vector<ItemRef> refs;
  try {
    refs.reserve(engine->size());
    engine->scan("", [&](std::string_view, ItemRef ref) {
      refs.push_back(ref);
      return true;
    });
  } catch (const std::bad_alloc&) {
    // Out of memory at shutdown: leak rather than crash.
  }
  engine.reset();
  for (ItemRef ref : refs) heap.free(heap.item(ref));
}

ItemHeader* Store::Impl::find_live(std::string_view key, Stripe& stripe,
                                   std::int64_t now) noexcept {
  ItemHeader* item = lookup_record(key);
  if (item == nullptr) return nullptr;
  if (is_flushed(*item, now)) {
    unlink(key, item, stripe);
    stripe.add(Counter::kGetFlushed);
    return nullptr;
  }
  if (is_expired(item->exptime, now)) {
    unlink(key, item, stripe);
    stripe.add(Counter::kGetExpired);
    return nullptr;
  }
  return item;
}

void Store::Impl::unlink(std::string_view key, ItemHeader* item, Stripe& stripe) noexcept {
  release(footprint(*item));
  stripe.sub(Counter::kCurrItems);
  erase_record(key, item);
}

bool Store::Impl::publish(ItemHeader* fresh, ItemHeader* old, std::size_t reserved, Stripe& stripe,
                          bool old_known) noexcept {
  // Durability order: the whole record reaches persistence before the index's reference to it
  // can. It is written back with the index's first fence (ItemHeap::flush_before_publish).
  seal_item(*fresh);
  ItemHeader* previous = nullptr;
  if (!publish_record(fresh, old, previous, stripe)) {
    release(reserved);
    free_record(fresh);
    return false;
  }
  // Under the stripe lock nobody else can have changed the key: previous is `old`.
  assert(!old_known || previous == old);
  stripe.add(Counter::kTotalItems);
  if (previous == nullptr) {
    stripe.add(Counter::kCurrItems);
    return true;
  }
  if (!old_known) {  // `reserved` covered the whole new record
    retire_unseen(*previous, stripe, clock.now());
    return true;
  }
  const std::size_t old_size = footprint(*previous);
  const std::size_t fresh_size = footprint(*fresh);
  if (old_size > fresh_size) release(old_size - fresh_size);
  free_record(previous);
  return true;
}

void Store::Impl::retire_unseen(ItemHeader& previous, Stripe& stripe, std::int64_t now) noexcept {
  // A replaced record that was already dead is counted as find_live() counts it (memcached
  // counts those a set meets, too).
  release(footprint(previous));
  if (is_flushed(previous, now)) {
    stripe.add(Counter::kGetFlushed);
  } else if (is_expired(previous.exptime, now)) {
    stripe.add(Counter::kGetExpired);
  }
  free_record(&previous);
}

void Store::Impl::stamp_record(ItemHeader& record, const RecordSpec& spec) noexcept {
  record.client_flags = spec.client_flags;
  record.exptime = spec.exptime;
  record.bits = spec.bits;
  // Taken last but for the times: a new cas may persist a new high-water mark.
  record.cas = cas_for(spec.cas);
  record.last_update = spec.last_update;
  record.last_access = spec.last_access;
}

Store::Impl::PutResult Store::Impl::put_record(const RecordSpec& spec, ItemHeader* old,
                                               Stripe& stripe, Room& room, ItemHeader* built,
                                               bool old_known) noexcept {
  const std::size_t size = footprint(spec);
  const std::size_t reserve = growth(size, old == nullptr ? 0 : footprint(*old));
  if (!room.reserve(reserve)) return {PutStatus::kNoRoom, nullptr, reserve};
  ItemHeader* record = built != nullptr ? built : allocate_record(spec);
  if (record == nullptr) {
    release(reserve);
    return {PutStatus::kNoBlock};
  }
  stamp_record(*record, spec);
  if (!publish(record, old, reserve, stripe, old_known)) return {PutStatus::kIndexFull};
  return {PutStatus::kPublished, record};
}

ItemHeader* Store::Impl::allocate_record(const RecordSpec& spec) noexcept {
  ItemHeader* record = records ? build_buffer(spec.key, spec.value_size())
                               : heap.allocate_item(spec.key, spec.value_size(), spec.client_flags);
  if (record == nullptr) return nullptr;
  char* value = record->value_data();
  for (const std::string_view piece : {spec.first, spec.second}) {
    if (!piece.empty()) std::memcpy(value, piece.data(), piece.size());
    value += piece.size();
  }
  std::memset(value, ' ', spec.pad);
  return record;
}

ItemHeader* Store::Impl::allocate_record_evicting(const RecordSpec& spec) noexcept {
  ItemHeader* record = allocate_record(spec);
  const std::size_t size = class_size(spec);
  // As memcached does: the class's least recently used records first, then (also for a class
  // without records) the oldest chunks.
  for (int round = 0; record == nullptr && options.evict_when_full &&
                      round < kClassEvictions + kEvacuations && make_block(size, round);
       ++round) {
    record = allocate_record(spec);
  }
  return record;
}

bool Store::Impl::try_reserve(std::size_t n) noexcept {
  if (n == 0) return true;
  if (records) {  // nothing is evicted: the engine's page file is the limit (kFull)
    used_bytes.fetch_add(n, std::memory_order_relaxed);
    return true;
  }
  const std::size_t limit = memory_limit.load(std::memory_order_relaxed);
  std::size_t current = used_bytes.load(std::memory_order_relaxed);
  do {
    if (n > limit || current > limit - n) return false;
  } while (!used_bytes.compare_exchange_weak(current, current + n, std::memory_order_relaxed));
  return true;
}

void Store::Impl::release(std::size_t n) noexcept {
  used_bytes.fetch_sub(n, std::memory_order_relaxed);
}

void Store::Impl::collect_clock_batch(std::vector<std::string>& batch) {
  std::lock_guard lock(hand_mutex);
  collect_batch(hand, batch);
}

void Store::Impl::collect_batch(std::string& cursor, std::vector<std::string>& batch,
                                std::size_t limit) {
  const std::string start = cursor;
  bool first = true;
  // From the hand to the end; the hand's own key was visited by the previous batch.
  scan_keys(start, [&](std::string_view key) {
    if (first) {
      first = false;
      if (!start.empty() && key == start) return true;
    }
    batch.emplace_back(key);
    return batch.size() < limit;
  });
  if (batch.size() < limit && !start.empty()) {
    // Wrap around: from the beginning up to and including the hand's key.
    scan_keys("", [&](std::string_view key) {
      if (key > start) return false;
      batch.emplace_back(key);
      return batch.size() < limit;
    });
  }
  if (!batch.empty()) cursor = batch.back();  // claims the batch
}

bool Store::Impl::clock_visit(const std::string& key, std::int64_t now) noexcept {
  Stripe& stripe = stripes.for_key(key);
  std::lock_guard lock(stripe.mutex);
  ItemHeader* item = lookup_record(key);
  return item != nullptr && age_out(key, item, stripe, now);
}

bool Store::Impl::evict_oldest(std::size_t size_class) noexcept {
  RecencyLists::Claim claim;
  if (!recency.claim_oldest(size_class, recency_stamp(), claim)) return false;
  const std::string_view key = claim.key_view();
  Stripe& stripe = stripes.for_key(key);
  std::lock_guard lock(stripe.mutex);
  // Replaced or deleted since it was claimed: its successor is listed on its own.
  if (engine->lookup(key) != claim.ref) return false;
  return age_out(key, heap.item(claim.ref), stripe, clock.now());
}

bool Store::Impl::age_out(std::string_view key, ItemHeader* item, Stripe& stripe,
                          std::int64_t now) noexcept {
  const bool fetched = item->has(ItemHeader::kFetched);
  if (is_dead(*item, now)) {
    stripe.add(Counter::kReclaimed);
    count(ClassCounter::kReclaimed, *item);
    if (!fetched) {
      stripe.add(Counter::kExpiredUnfetched);
      count(ClassCounter::kExpiredUnfetched, *item);
    }
    unlink(key, item, stripe);
    return true;
  }
  if (!options.evict_when_full) return false;  // -M: only dead items make room
  if (item->has(ItemHeader::kReferenced)) {
    item->bits &= static_cast<std::uint8_t>(~ItemHeader::kReferenced);  // second chance
    return false;
  }
  stripe.add(Counter::kEvictions);
  if (!fetched) stripe.add(Counter::kEvictedUnfetched);
  count_eviction(*item, now);
  unlink(key, item, stripe);
  return true;
}

void Store::Impl::count_eviction(const ItemHeader& item, std::int64_t now) noexcept {
  if (records) return;
  const std::size_t size_class = heap.size_class(item.class_size());
  class_counters.add(size_class, ClassCounter::kEvicted);
  if (item.exptime != 0) class_counters.add(size_class, ClassCounter::kEvictedNonzero);
  if (!item.has(ItemHeader::kFetched)) {
    class_counters.add(size_class, ClassCounter::kEvictedUnfetched);
  }
  class_counters.set_evicted_time(size_class, now - item.last_access);
}

bool Store::Impl::make_room(std::size_t n, Room& room) noexcept {
  const std::size_t limit = memory_limit.load(std::memory_order_relaxed);
  if (n > limit) return false;
  // The room made is reserved at once, before any other store can take it.
  const auto reserved = [&] {
    if (!try_reserve(n)) return false;
    room.bytes += n;
    return true;
  };
  if (reserved()) return true;
  if (options.evict_when_full) {
    // Least recently used first, over all classes: the class whose tail is oldest gives.
    // Two passes suffice: the first clears every referenced bit, the second evicts.
    // An eviction whose room a concurrent writer took first is not a wasted visit: that writer
    // stored, so the cache made progress; it gets its own, larger bound so that writers that all
    // evict do not refuse one another (kLostRoomFactor).
    const std::size_t max_visits = 2 * key_count() + kClockBatch;
    const std::size_t max_lost = kLostRoomFactor * max_visits;
    for (std::size_t visits = 0, lost = 0; visits < max_visits && lost < max_lost;) {
      const std::size_t oldest = recency.oldest_class();
      if (oldest == RecencyLists::kNoClass) break;
      if (!evict_oldest(oldest)) {
        ++visits;
      } else if (reserved()) {
        return true;
      } else {
        ++lost;
      }
    }
    return reserved();
  }
  // -M: only dead items may go, so a short look in key order suffices (a full pass per refused
  // set would make a full cache quadratically slow); the background sweep reclaims the rest.
  const std::size_t max_visits = kNoEvictVisits;
  std::size_t visits = 0;
  try {
    std::vector<std::string> batch;
    batch.reserve(kClockBatch);
    while (visits < max_visits) {
      batch.clear();
      collect_clock_batch(batch);
      if (batch.empty()) break;
      const std::int64_t now = clock.now();
      for (std::size_t i = 0; i < batch.size(); ++i) {
        ++visits;
        if (clock_visit(batch[i], now) && reserved()) {
          // Stopped early: give the rest of the batch back by moving the hand back to the
          // last key visited, unless another evictor has claimed a batch since.
          std::lock_guard lock(hand_mutex);
          if (hand == batch.back()) hand = batch[i];
          return true;
        }
      }
    }
  } catch (const std::bad_alloc&) {
    return false;
  }
  return reserved();
}

bool Store::Impl::make_block(std::size_t class_size, int attempt) noexcept {
  if (attempt < kClassEvictions) {
    // Each record evicted from a small class frees a block that fits; a large run may not.
    const std::size_t size_class = recency.class_of(class_size);
    const std::size_t max_visits = std::min(2 * recency.size(size_class) + 1, kBlockVisits);
    for (std::size_t visits = 0; visits < max_visits; ++visits) {
      if (evict_oldest(size_class)) return true;
    }
  }
  return evacuate_for(class_size);
}

SweepResult Store::Impl::reclaim_dead(std::size_t max_visits) noexcept {
  SweepResult result;
  std::size_t& visits = result.visited;
  // One pass at most: the hand wraps around, and a small store would otherwise be visited
  // over and over within one call (a few keys, 10,000 visits a second: every key thousands
  // of times).
  max_visits = std::min(max_visits, key_count());
  try {
    std::vector<std::string> batch;
    while (visits < max_visits) {
      batch.clear();
      {
        std::lock_guard lock(sweep_mutex);
        collect_batch(sweep_hand, batch, std::min(kClockBatch, max_visits - visits));
      }
      if (batch.empty()) break;
      const std::int64_t now = clock.now();
      for (const std::string& key : batch) {
        ++visits;
        Stripe& stripe = stripes.for_key(key);
        std::lock_guard lock(stripe.mutex);
        ItemHeader* item = lookup_header(key);
        if (item == nullptr || !is_dead(*item, now)) continue;
        stripe.add(Counter::kReclaimed);
        count(ClassCounter::kReclaimed, *item);
        if (!item->has(ItemHeader::kFetched)) {
          stripe.add(Counter::kExpiredUnfetched);
          count(ClassCounter::kExpiredUnfetched, *item);
        }
        unlink(key, item, stripe);
        ++result.reclaimed;
      }
    }
  } catch (const std::bad_alloc&) {
    // Try again at the next sweep.
  }
  return result;
}

bool Store::Impl::evacuate_for(std::size_t class_size, Stripe* held,
                               std::string_view keep) noexcept {
  // The index, not the raw blocks, says which items live there (blocks may be index nodes,
  // which is why several chunks are evacuated per pass).
  std::vector<std::pair<std::string, ItemRef>> victims;
  try {
    // Some candidates may hold only index nodes, which cannot move: ask for more chunks than
    // needed and evacuate the first kChunksPerEvacuation (fewest blocks first) that hold items.
    const auto ranges =
        heap.evacuation_ranges(class_size, kChunksPerEvacuation * kCandidatesPerChunk);
    if (ranges.empty()) return false;
    std::vector<std::vector<std::pair<std::string, ItemRef>>> by_range(ranges.size());
    engine->scan("", [&](std::string_view key, ItemRef ref) {
      for (std::size_t i = 0; i < ranges.size(); ++i) {
        if (ref >= ranges[i].first && ref < ranges[i].second) by_range[i].emplace_back(key, ref);
      }
      return true;
    });
    std::size_t chunks = 0;
    for (std::size_t i = 0; i < ranges.size() && chunks < kChunksPerEvacuation; ++i) {
      if (by_range[i].empty()) continue;
      ++chunks;
      for (auto& victim : by_range[i]) victims.push_back(std::move(victim));
    }
  } catch (const std::bad_alloc&) {
    return false;
  }
  bool evicted = false;
  for (const auto& [key, ref] : victims) {
    Stripe& stripe = stripes.for_key(key);
    std::unique_lock lock(stripe.mutex, std::defer_lock);
    if (&stripe != held) {
      if (held == nullptr) {
        lock.lock();
      } else if (!lock.try_lock()) {
        continue;
      }
    } else if (key == keep) {
      continue;
    }
    // Replaced, deleted or evicted meanwhile (a concurrent evacuation picks the same oldest
    // chunks): its block is free all the same, which is progress for the caller.
    evicted = true;
    if (engine->lookup(key) != ref) continue;
    ItemHeader* item = heap.item(ref);
    stripe.add(Counter::kEvictions);
    if (!item->has(ItemHeader::kFetched)) stripe.add(Counter::kEvictedUnfetched);
    count_eviction(*item, clock.now());
    unlink(key, item, stripe);
  }
  return evicted;
}

void Store::Impl::drop_key(std::string_view key) noexcept {
  Stripe& stripe = stripes.for_key(key);
  std::lock_guard lock(stripe.mutex);
  if (ItemHeader* item = lookup_record(key)) unlink(key, item, stripe);
}

StoreStats Store::Impl::stats() const noexcept {
  StoreStats s;
  const auto total = [&](Counter c) { return stripes.total(c); };
  s.curr_items = total(Counter::kCurrItems);
  s.total_items = total(Counter::kTotalItems);
  s.bytes = used_bytes.load(std::memory_order_relaxed);
  s.limit_maxbytes = memory_limit.load(std::memory_order_relaxed);
  s.evictions = total(Counter::kEvictions);
  s.expired_unfetched = total(Counter::kExpiredUnfetched);
  s.evicted_unfetched = total(Counter::kEvictedUnfetched);
  s.reclaimed = total(Counter::kReclaimed);
  s.get_hits = total(Counter::kGetHits);
  s.get_misses = total(Counter::kGetMisses);
  s.get_expired = total(Counter::kGetExpired);
  s.get_flushed = total(Counter::kGetFlushed);
  s.cmd_get = total(Counter::kCmdGet);
  s.cmd_set = total(Counter::kCmdSet);
  s.cmd_touch = total(Counter::kCmdTouch);
  s.cmd_flush = cmd_flush.load(std::memory_order_relaxed);
  s.touch_hits = total(Counter::kTouchHits);
  s.touch_misses = total(Counter::kTouchMisses);
  s.delete_hits = total(Counter::kDeleteHits);
  s.delete_misses = total(Counter::kDeleteMisses);
  s.incr_hits = total(Counter::kIncrHits);
  s.incr_misses = total(Counter::kIncrMisses);
  s.decr_hits = total(Counter::kDecrHits);
  s.decr_misses = total(Counter::kDecrMisses);
  s.cas_hits = total(Counter::kCasHits);
  s.cas_misses = total(Counter::kCasMisses);
  s.cas_badval = total(Counter::kCasBadval);
  return s;
}

void Store::Impl::reset_stats() noexcept {
  // Like memcached's `stats reset`: everything but the current state (items, bytes).
  for (std::size_t i = 0; i < stripes.size(); ++i) {
    Stripe& stripe = stripes.at(i);
    std::lock_guard lock(stripe.mutex);
    for (std::size_t c = 0; c < kCounterCount; ++c) {
      if (c == static_cast<std::size_t>(Counter::kCurrItems)) continue;
      stripe.counters[c].store(0, std::memory_order_relaxed);
    }
  }
  cmd_flush.store(0, std::memory_order_relaxed);
  class_counters.reset();
}

SlabStats Store::Impl::slab_stats() const {
  SlabStats out;
  if (records) return out;
  out.page_size = heap.page_size();
  const std::vector<pm::ClassUsage> usage = heap.class_usage();
  const std::int64_t now = clock.now();
  // The last heap class (records larger than slab_chunk_max, in runs of whole pages) is counted
  // in the largest class, as memcached keeps such items in chunks of that class.
  const std::size_t shown = usage.size() - 1;
  out.classes.resize(shown);
  for (std::size_t c = 0; c < usage.size(); ++c) {
    SizeClassStats& s = out.classes[std::min(c, shown - 1)];
    const pm::ClassUsage& u = usage[c];
    if (c < shown) {
      s.id = static_cast<std::uint32_t>(c + 1);
      s.chunk_size = u.block_size;
      s.chunks_per_page = u.blocks_per_chunk;
      s.total_pages = u.chunks;
      s.used_chunks = u.blocks_in_use;
    } else {  // a run's pages are wholly used
      s.total_pages += u.chunks;
      s.used_chunks += u.chunks * s.chunks_per_page;
    }
    const auto total = [&](ClassCounter k) { return class_counters.total(c, k); };
    s.get_hits += total(ClassCounter::kGetHits);
    s.cmd_set += total(ClassCounter::kCmdSet);
    s.delete_hits += total(ClassCounter::kDeleteHits);
    s.incr_hits += total(ClassCounter::kIncrHits);
    s.decr_hits += total(ClassCounter::kDecrHits);
    s.cas_hits += total(ClassCounter::kCasHits);
    s.cas_badval += total(ClassCounter::kCasBadval);
    s.touch_hits += total(ClassCounter::kTouchHits);
    s.evicted += total(ClassCounter::kEvicted);
    s.evicted_nonzero += total(ClassCounter::kEvictedNonzero);
    s.outofmemory += total(ClassCounter::kOutOfMemory);
    s.reclaimed += total(ClassCounter::kReclaimed);
    s.expired_unfetched += total(ClassCounter::kExpiredUnfetched);
    s.evicted_unfetched += total(ClassCounter::kEvictedUnfetched);
    s.evicted_time = std::max<std::uint64_t>(
        s.evicted_time, static_cast<std::uint64_t>(class_counters.evicted_time(c)));
    s.number += recency.size(c);
    s.mem_requested += recency.requested_bytes(c);
    const std::int64_t oldest = recency.oldest_access(c);
    if (recency.size(c) != 0 && oldest != 0 && now > oldest) {
      s.age = std::max<std::uint64_t>(s.age, static_cast<std::uint64_t>(now - oldest));
    }
  }
  for (SizeClassStats& s : out.classes) {
    s.total_chunks = s.total_pages * s.chunks_per_page;
    s.free_chunks = s.total_chunks - std::min(s.total_chunks, s.used_chunks);
  }
  return out;
}

}  // namespace pmcached::engine

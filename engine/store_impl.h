// Store::Impl: the store's private state and helpers, shared by store.cc (reads and storage
// commands), store_update.cc (delete, arithmetic, touch, flush) and store_memory.cc (record
// lifetime, memory accounting, CLOCK eviction, statistics).
//
// Locking rules (deadlock freedom):
//   stripe mutex  ->  engine (its own shared_mutex)        every key operation
//   hand mutex    ->  engine                                 eviction collects a batch of keys
// Never two stripe mutexes at once; never a stripe mutex while evicting or scanning; the
// engine never calls back into the store. Operations that need memory while holding a
// stripe take it with try_reserve(); if that fails they release the stripe, call make_room()
// and start over.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/expiry.h"
#include "engine/item.h"
#include "engine/item_heap.h"
#include "engine/lock_stripes.h"
#include "engine/pm/persistence.h"
#include "engine/store.h"

namespace pmcached::engine {

struct Store::Impl {
  Impl(std::unique_ptr<IndexEngine> index, std::unique_ptr<ItemHeap> own_heap, ItemHeap& item_heap,
       const Clock& time_source, StoreOptions opts);
  ~Impl();

  // --- operations (one per public Store method) ---
  GetOutcome get(const GetRequest& request, const ItemVisitor& visit) noexcept;
  StoreOutcome store(const StoreRequest& request) noexcept;
  StoreStatus remove(const DeleteRequest& request) noexcept;
  ArithmeticOutcome arithmetic(const ArithmeticRequest& request) noexcept;
  StoreStatus touch(std::string_view key, std::int64_t exptime) noexcept;
  void flush_all(std::int64_t delay_seconds) noexcept;
  void reset_stats() noexcept;
  StoreStats stats() const noexcept;

  // --- helpers; `stripe` is the key's stripe and its mutex is held ---

  // The live item for `key`, or nullptr. An expired or flushed item is unlinked and freed
  // on the way (memcached's lazy reclaim), counted as get_expired / get_flushed.
  ItemHeader* find_live(std::string_view key, Stripe& stripe, std::int64_t now) noexcept;

  // Removes `item` (the current record of `key`) from the index and frees it.
  void unlink(std::string_view key, ItemHeader* item, Stripe& stripe) noexcept;

  // Publishes `fresh` for its key, replacing `old` (nullptr if none), then frees `old`.
  // `reserved` bytes were taken with try_reserve(); the accounting ends at +fresh -old.
  // Without `old_known` (a plain set that did not look the key up), `reserved` is fresh's
  // whole footprint and whatever record the index held for the key is replaced and freed.
  // When the engine has no room for a node and evictions are allowed, chunks are evacuated
  // (evacuate_for with `stripe` held) and the index insert retried. On failure (the engine is
  // still out of memory) `fresh` is freed, the reservation returned, `old` stays, and false is
  // returned.
  bool publish(ItemHeader* fresh, ItemHeader* old, std::size_t reserved, Stripe& stripe,
               bool old_known = true) noexcept;

  // Memory accounting counts what records really take in the heap.
  std::size_t footprint(std::size_t record_size) const noexcept {
    return heap.footprint(record_size);
  }
  std::size_t footprint(const ItemHeader& item) const noexcept {
    return heap.footprint(item.record_size());
  }

  // Bytes to reserve to replace `old_size` bytes by `new_size` bytes.
  static std::size_t growth(std::size_t new_size, std::size_t old_size) noexcept {
    return new_size > old_size ? new_size - old_size : 0;
  }

  // The next cas value. With a pool, values up to the persisted high-water mark may be
  // handed out; reaching it persists a new mark first, so no cas repeats after a restart.
  std::uint64_t next_cas() noexcept {
    const std::uint64_t cas = cas_counter.fetch_add(1, std::memory_order_relaxed) + 1;
    if (cas >= cas_reserved.load(std::memory_order_acquire)) reserve_cas(cas);
    return cas;
  }
  void reserve_cas(std::uint64_t cas) noexcept;
  // How many cas values one persisted high-water mark covers.
  static constexpr std::uint64_t kCasBatch = 1u << 20;
  // The cas for a new or modified item: meta E(token) if given, else the next counter value.
  std::uint64_t cas_for(const std::optional<std::uint64_t>& explicit_cas) noexcept {
    return explicit_cas ? *explicit_cas : next_cas();
  }
  bool is_flushed(const ItemHeader& item, std::int64_t now) const noexcept {
    return flush_state.is_flushed(item.last_update, item.cas, now);
  }
  bool is_dead(const ItemHeader& item, std::int64_t now) const noexcept {
    return is_expired(item.exptime, now) || is_flushed(item, now);
  }

  // --- memory (no stripe mutex needed) ---
  bool try_reserve(std::size_t bytes) noexcept;  // false if it would pass the limit
  void release(std::size_t bytes) noexcept;
  // Reclaims dead items and, if allowed, evicts live ones in CLOCK order until `bytes` more
  // fit. Must be called with no stripe mutex held. False if no room could be made.
  bool make_room(std::size_t bytes) noexcept;
  // Collects up to kClockBatch keys from the CLOCK hand onwards (wrapping) and moves it.
  void collect_clock_batch(std::vector<std::string>& batch);
  // The same for any hand; the caller holds the hand's mutex.
  void collect_batch(std::string& cursor, std::vector<std::string>& batch);
  // The background sweep: unlinks expired and flushed items, visiting at most `max_visits`
  // keys from where the last sweep stopped. Returns how many it reclaimed.
  std::size_t reclaim_dead(std::size_t max_visits) noexcept;
  // One CLOCK step on `key`; true if its record was freed.
  bool clock_visit(const std::string& key, std::int64_t now) noexcept;

  // Changes a published item's expiry in place: one aligned 8-byte store, persisted (a touch
  // is acknowledged, so it must survive a crash).
  void set_exptime(ItemHeader& item, std::int64_t exptime) noexcept {
    item.exptime = exptime;
    pm::OpScope scope(pm::OpKind::kItem);
    heap.persist(&item.exptime, sizeof item.exptime);
  }

  // Evicts every item in the heap regions that evacuation_ranges() names for `record_size`,
  // so that chunks can change size class. True if any was evicted. With `held` (a stripe the
  // caller has locked, for the index's node allocations inside publish()), that stripe's items
  // are evicted under the caller's lock, except `keep` (the key being published), and other
  // stripes are only try-locked, so no lock order can deadlock; without it no stripe lock may be
  // held.
  bool evacuate_for(std::size_t record_size, Stripe* held = nullptr,
                    std::string_view keep = {}) noexcept;
  // The size evacuate_for() is asked to make room for when the index engine cannot allocate a
  // node: larger than any node, so chunks of every node class are candidates to empty.
  static constexpr std::size_t kIndexNodeRoom = 4096;
  // Chunks emptied per evacuation pass (one scan of the index serves them all).
  static constexpr std::size_t kChunksPerEvacuation = 4;
  // Candidates looked at per chunk evacuated (some hold only index nodes).
  static constexpr std::size_t kCandidatesPerChunk = 4;
  // Evacuations one store() may try before answering out of memory.
  static constexpr int kEvacuations = 4;

  // Unlinks `key` if present (memcached drops the old value when a set fails).
  void drop_key(std::string_view key) noexcept;

  // How many times an operation retries after make_room() before giving up.
  static constexpr int kRoomAttempts = 16;
  // Keys collected per CLOCK batch.
  static constexpr std::size_t kClockBatch = 32;
  // Keys make_room() looks at for dead items under -M.
  static constexpr std::size_t kNoEvictVisits = 4 * kClockBatch;

  std::unique_ptr<ItemHeap> owned_heap;  // the DRAM heap of a store made without one
  ItemHeap& heap;
  std::unique_ptr<IndexEngine> engine;
  const Clock& clock;
  const StoreOptions options;
  LockStripes stripes;
  // memcached's process_started (start - ITEM_UPDATE_INTERVAL - 2): flush_all with an
  // absolute time at or before it cancels flushes rather than flushing.
  const std::int64_t process_started;

  alignas(64) std::atomic<std::uint64_t> cas_counter{0};
  std::atomic<std::uint64_t> cas_reserved{UINT64_MAX};  // a pool's persisted high-water mark
  std::mutex cas_mutex;
  alignas(64) std::atomic<std::size_t> used_bytes{0};  // header+key+value of live records
  alignas(64) FlushState flush_state;
  std::atomic<std::uint64_t> cmd_flush{0};

  // CLOCK hand: the key the next eviction batch starts from ("" = the beginning).
  alignas(64) std::mutex hand_mutex;
  std::string hand;
  // The expiry sweep's own hand, so it does not disturb the CLOCK.
  std::mutex sweep_mutex;
  std::string sweep_hand;
};

}  // namespace pmcached::engine

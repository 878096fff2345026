// Store::Impl: the store's private state and helpers, shared by store.cc (reads and storage
// commands), store_update.cc (delete, arithmetic, touch, flush) and store_memory.cc (record
// lifetime, memory accounting, eviction by recency, statistics).
//
// Locking rules (deadlock freedom):
//   stripe mutex  ->  engine (its own shared_mutex)        every key operation
//   stripe mutex  ->  recency list mutex                   publishing and unlinking a record
//   hand mutex    ->  engine                                 -M and the sweep collect keys
// Never two stripe mutexes at once; never a stripe mutex while evicting or scanning; the
// engine never calls back into the store; the eviction walk copies a key under a list mutex and
// releases it before taking the key's stripe. Operations that need memory while holding a
// stripe take it with try_reserve(); if that fails they release the stripe, call make_room()
// and start over (retry_with_room()).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/pm/persistence.h"
#include "engine/store/class_counters.h"
#include "engine/store/expiry.h"
#include "engine/store/item.h"
#include "engine/store/item_heap.h"
#include "engine/store/lock_stripes.h"
#include "engine/store/recency_lists.h"
#include "engine/store/store.h"
#include "engine/store/store_plan.h"

namespace pmcached::engine {

// A key memcached accepts: 1 to 250 bytes.
inline bool valid_key(std::string_view key) noexcept {
  return !key.empty() && key.size() <= kMaxKeyLength;
}

// What a visitor sees of a published record.
inline ItemView view_of(const ItemHeader& item) noexcept {
  ItemView view;
  view.key = item.key();
  view.value = item.value();
  view.client_flags = item.client_flags;
  view.cas = item.cas;
  view.exptime = item.exptime;
  view.last_access = item.last_access;  // before this access (mg h, l)
  view.fetched = item.has(ItemHeader::kFetched);
  view.stale = item.has(ItemHeader::kStale);
  view.win_token_sent = item.has(ItemHeader::kTokenSent);
  view.binary_key = item.has(ItemHeader::kKeyBinary);
  return view;
}

struct Store::Impl {
  Impl(std::unique_ptr<IndexEngine> index, std::unique_ptr<RecordEngine> owner,
       std::unique_ptr<ItemHeap> own_heap, ItemHeap& item_heap, pm::Pool* persistent_pool,
       const Clock& time_source, StoreOptions opts);
  ~Impl();

  // --- operations (one per public Store method) ---
  GetOutcome get(const GetRequest& request, const ItemVisitor& visit) noexcept;
  StoreOutcome store(const StoreRequest& request) noexcept;
  void store_batch(std::span<const StoreRequest> requests,
                   std::span<StoreOutcome> outcomes) noexcept;
  bool stores_in_groups() const noexcept;
  StoreStatus remove(const DeleteRequest& request) noexcept;
  ArithmeticOutcome arithmetic(const ArithmeticRequest& request) noexcept;
  StoreStatus touch(std::string_view key, std::int64_t exptime) noexcept;
  void flush_all(std::int64_t delay_seconds) noexcept;
  void reset_stats() noexcept;
  StoreStats stats() const noexcept;
  SlabStats slab_stats() const;

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
  // The record a set replaced without having looked it up, once the index no longer holds it:
  // its footprint released, counted if it was already dead, freed. Stripe held.
  void retire_unseen(ItemHeader& previous, Stripe& stripe, std::int64_t now) noexcept;
  // Sets a new record's metadata from `spec`, taking its cas.
  void stamp_record(ItemHeader& record, const RecordSpec& spec) noexcept;

  // Memory accounting counts what records really take in the heap: the block of their class
  // size (their record size, for a record engine).
  std::size_t footprint(const ItemHeader& item) const noexcept {
    return records ? item.record_size() : heap.footprint(item.class_size());
  }
  std::size_t footprint(const RecordSpec& spec) const noexcept {
    return records ? item_record_size(spec.key.size(), spec.value_size())
                   : heap.footprint(class_size(spec));
  }
  static std::size_t class_size(const RecordSpec& spec) noexcept {
    return memcached_item_size(spec.key.size(), spec.value_size(), spec.client_flags);
  }

  // --- per-class statistics (none for a record engine: its records are on its pages) ---
  void count(ClassCounter c, std::size_t class_size) noexcept {
    if (!records) class_counters.add(heap.size_class(class_size), c);
  }
  void count(ClassCounter c, const ItemHeader& item) noexcept { count(c, item.class_size()); }
  // What a visitor sees of `item`, with its size class.
  ItemView view(const ItemHeader& item) const noexcept {
    ItemView v = view_of(item);
    if (!records) v.size_class = static_cast<std::uint32_t>(heap.size_class(item.class_size()) + 1);
    return v;
  }
  // An eviction of `item` (its key's stripe held): evicted, evicted_nonzero, evicted_time,
  // evicted_unfetched.
  void count_eviction(const ItemHeader& item, std::int64_t now) noexcept;

  // --- the seam between the store and where records live (store_records.cc) ---
  // An index engine maps keys to records in `heap`; a record engine (`records`) owns them and
  // hands out copies. These are the only functions that tell the two apart.

  // The record of `key`, live or not, or nullptr. A record engine's is a copy in a per-thread
  // buffer, valid until this thread's next lookup_record().
  ItemHeader* lookup_record(std::string_view key) noexcept;
  // As lookup_record(), but of a record engine's record only the header is copied: the key and
  // value behind it are not there. For checks of the header alone (the expiry sweep), which
  // should not copy a megabyte value or read its overflow pages.
  ItemHeader* lookup_header(std::string_view key) noexcept;
  // Removes `key`'s record from the index or engine (`item` is what lookup_record() gave).
  void erase_record(std::string_view key, ItemHeader* item) noexcept;
  // Makes `fresh` the record of its key. False if the engine had no room (nothing changed).
  // `previous` is the record it replaced (nullptr if none; for a record engine always nullptr
  // when `old` was not looked up).
  bool publish_record(ItemHeader* fresh, ItemHeader* old, ItemHeader*& previous,
                      Stripe& stripe) noexcept;
  // Frees a record built by allocate_record() or replaced by publish_record() (a record engine's
  // are per-thread buffers: nothing to free).
  void free_record(ItemHeader* item) noexcept;
  // A published record's access metadata (bits, last access) may have changed from these: a
  // record engine stores the hint (not durably) when either changed (a read is not a write every
  // time: the access time moves at most once per kItemUpdateInterval); a heap record was changed
  // in place.
  void save_hints(ItemHeader& item, std::uint8_t bits_before, std::int64_t access_before) noexcept;
  // A fetch or touch of `item` at `now`, as memcached's do_item_update(): fetched and referenced,
  // and the access time moved only once it is more than ITEM_UPDATE_INTERVAL old, so that what
  // `mg l`, `me` and metadump show is what memcached shows. (memcached's segmented LRU moves it
  // on a later fetch instead, when its LRU maintainer has cleared the item's active bit: timing,
  // which its deterministic mode without the maintainer leaves out.)
  static void note_access(ItemHeader& item, std::int64_t now) noexcept {
    item.bits |= ItemHeader::kFetched | ItemHeader::kReferenced;
    if (item.last_access < now - kItemUpdateInterval) {
      // Atomic: `stats items` reads a class's least recent access time under the class's list
      // mutex, not under this item's stripe (RecencyLists::oldest_access).
      std::atomic_ref<std::int64_t>(item.last_access).store(now, std::memory_order_relaxed);
    }
  }
  static constexpr std::int64_t kItemUpdateInterval = 60;  // memcached's ITEM_UPDATE_INTERVAL
  // Visits keys >= `from` in key order until `visit` returns false.
  void scan_keys(std::string_view from, const std::function<bool(std::string_view key)>& visit);
  // Keys in the index or engine.
  std::size_t key_count() const noexcept;
  // A record engine's new record: a zeroed header with the key, in a per-thread buffer (one per
  // thread besides lookup_record()'s), valid until this thread's next build_buffer().
  ItemHeader* build_buffer(std::string_view key, std::size_t value_size) noexcept;

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
  // Store::recover() for a record engine (store_recovery.cc).
  RecoveryReport recover_records();

  bool is_flushed(const ItemHeader& item, std::int64_t now) const noexcept {
    return flush_state.is_flushed(item.last_update, item.cas, now);
  }
  bool is_dead(const ItemHeader& item, std::int64_t now) const noexcept {
    return is_expired(item.exptime, now) || is_flushed(item, now);
  }

  // --- memory (no stripe mutex needed) ---
  bool try_reserve(std::size_t bytes) noexcept;  // false if it would pass the limit
  void release(std::size_t bytes) noexcept;
  // Memory that make_room() reserved for an operation between two of its attempts, so that a
  // concurrent store cannot take it first (which could starve the evicting writer); whatever is
  // left is released when the operation ends.
  struct Room {
    explicit Room(Impl& owner) noexcept : impl(owner) {}
    ~Room() {
      if (bytes != 0) impl.release(bytes);
    }
    Room(const Room&) = delete;
    Room& operator=(const Room&) = delete;
    // Reserves `n` bytes, taking the room first.
    bool reserve(std::size_t n) noexcept {
      if (bytes >= n) {
        bytes -= n;
        return true;
      }
      if (!impl.try_reserve(n - bytes)) return false;
      bytes = 0;
      return true;
    }
    Impl& impl;
    std::size_t bytes = 0;
  };

  // The retry-with-room loop of every operation that may need memory: runs `attempt(room,
  // may_grow)` with `stripe` locked until it returns 0. Any other return is the bytes it could
  // not reserve: the stripe is released, make_room() reserves them into `room`, and the attempt
  // runs again. After kRoomAttempts, or once make_room() fails, may_grow is false and the
  // attempt must finish.
  template <typename Attempt>
  void retry_with_room(Stripe& stripe, Attempt&& attempt) noexcept {
    Room room(*this);
    bool may_grow = true;
    for (int round = 1;; ++round) {
      std::size_t need = 0;
      {
        std::lock_guard lock(stripe.mutex);
        need = attempt(room, may_grow);
      }
      if (need == 0) return;
      if (round >= kRoomAttempts || !make_room(need, room)) may_grow = false;
    }
  }

  // --- building records; `stripe` is the key's stripe and its mutex is held ---

  enum class PutStatus : std::uint8_t {
    kPublished,
    kNoRoom,     // the memory limit: nothing was allocated; `need` more bytes would do
    kNoBlock,    // the heap had no block for the record
    kIndexFull,  // the index had no room for it (publish() failed)
  };
  struct PutResult {
    PutStatus status = PutStatus::kNoRoom;
    ItemHeader* record = nullptr;  // the published record
    std::size_t need = 0;          // kNoRoom: the reservation that failed
  };
  // Reserve -> allocate -> stamp -> publish: the one way a new record for a key is made. Reserves
  // what the record adds over `old` (from `room` first), allocates it unless `built` already
  // holds its key and value, stamps its header from `spec` and publishes it in place of `old`
  // (see publish() for `old_known`). `built` stays the caller's on kNoRoom only.
  PutResult put_record(const RecordSpec& spec, ItemHeader* old, Stripe& stripe, Room& room,
                       ItemHeader* built = nullptr, bool old_known = true) noexcept;
  // A record holding `spec`'s key and value, header otherwise zero; nullptr if the heap is full.
  ItemHeader* allocate_record(const RecordSpec& spec) noexcept;
  // The same with no stripe held: when the size class is full although the memory limit is not
  // reached, evicts from the class or evacuates chunks (make_block()) and tries again.
  ItemHeader* allocate_record_evicting(const RecordSpec& spec) noexcept;

  // --- parts of the operations ---

  // A storage command refused with `status` (too large, out of memory).
  StoreOutcome refused(const StoreRequest& request, StoreStatus status) noexcept;
  // store() of a valid request whose record `fresh` is built already (nullptr for append and
  // prepend, which build theirs under the lock); takes `fresh` over.
  StoreOutcome store_built(const StoreRequest& request, ItemHeader* fresh) noexcept;
  // store_batch() of at most kGroup (32) requests (store_batch.cc).
  void store_group(std::span<const StoreRequest> requests,
                   std::span<StoreOutcome> outcomes) noexcept;
  // A plain set published without looking the key up (see store.cc). False, with `fresh` still
  // the caller's, when its record does not fit under the memory limit.
  bool store_blind(const StoreRequest& request, ItemHeader*& fresh, StoreOutcome& out) noexcept;
  // One attempt of a storage command under the stripe lock; returns retry_with_room()'s need.
  // `fresh` is the record built before locking (nullptr for append/prepend).
  std::size_t store_locked(const StoreRequest& request, Stripe& stripe, Room& room, bool may_grow,
                           ItemHeader*& fresh, StoreOutcome& out) noexcept;
  // Builds and publishes a planned record in place of `old`; returns the need, as above.
  std::size_t store_planned(const RecordSpec& spec, ItemHeader* old, Stripe& stripe, Room& room,
                            bool may_grow, ItemHeader*& fresh, StoreOutcome& out) noexcept;
  // The answer to a get that found `item` (nullptr: a miss): counters, touch, win, visit.
  void answer_get(const GetRequest& request, ItemHeader* item, Stripe& stripe, std::int64_t now,
                  const ItemVisitor& visit, GetOutcome& out) noexcept;
  // incr/decr on a miss (ma N creates the item) and on a live item; return the need, as above.
  std::size_t create_counter(const ArithmeticRequest& request, Stripe& stripe, Room& room,
                             bool may_grow, std::int64_t now, ArithmeticOutcome& out) noexcept;
  std::size_t update_counter(const ArithmeticRequest& request, ItemHeader* old, Stripe& stripe,
                             Room& room, bool may_grow, std::int64_t now,
                             ArithmeticOutcome& out) noexcept;
  // Reclaims dead items and, if allowed, evicts live ones, least recently used first (the
  // oldest tail of all size classes), until `bytes` more fit, and adds them to `room`. Must be
  // called with no stripe mutex held. False if no room could be made.
  bool make_room(std::size_t bytes, Room& room) noexcept;
  // When allocating a record of class size `class_size` failed (its size class has no free block
  // and no chunk is free), the `attempt`th time: frees a block of that class by evicting the
  // class's least recently used record; from attempt kClassEvictions on, or when the class has no
  // records, evacuates the chunks whose blocks are oldest instead (a large run needs whole
  // chunks). No stripe mutex may be held. False if nothing could be freed.
  bool make_block(std::size_t class_size, int attempt) noexcept;
  // One step of the recency walk on `size_class`: its least recent record is reclaimed if dead,
  // given a second chance if read since it was stored or last passed, else evicted. True if a
  // record was freed.
  bool evict_oldest(std::size_t size_class) noexcept;
  // The eviction decision for `item`, the published record of `key` (its stripe is held): frees
  // it if dead, or (when evictions are allowed) if not referenced; clears the referenced bit.
  bool age_out(std::string_view key, ItemHeader* item, Stripe& stripe, std::int64_t now) noexcept;
  // Orders records in the recency lists: grows with every stored record.
  std::uint64_t recency_stamp() const noexcept {
    return cas_counter.load(std::memory_order_relaxed);
  }
  // Collects up to kClockBatch keys from the CLOCK hand onwards (wrapping) and moves it.
  void collect_clock_batch(std::vector<std::string>& batch);
  // The same for any hand and at most `limit` keys; the caller holds the hand's mutex.
  void collect_batch(std::string& cursor, std::vector<std::string>& batch,
                     std::size_t limit = kClockBatch);
  // The background sweep: unlinks expired and flushed items, visiting at most `max_visits`
  // keys from where the last sweep stopped, and none twice in one call.
  SweepResult reclaim_dead(std::size_t max_visits) noexcept;
  // One CLOCK step on `key` (key order, -M only); true if its record was freed.
  bool clock_visit(const std::string& key, std::int64_t now) noexcept;

  // Changes a published item's expiry in place: one aligned 8-byte store, persisted (a touch
  // is acknowledged, so it must survive a crash).
  void set_exptime(ItemHeader& item, std::int64_t exptime) noexcept;

  // Evicts every item in the heap regions that evacuation_ranges() names for `class_size`,
  // so that chunks can change size class. True if any of their items was evicted, by this call
  // or meanwhile by another (false if none could be looked at). With `held` (a stripe the
  // caller has locked, for the index's node allocations inside publish()), that stripe's items
  // are evicted under the caller's lock, except `keep` (the key being published), and other
  // stripes are only try-locked, so no lock order can deadlock; without it no stripe lock may be
  // held.
  bool evacuate_for(std::size_t class_size, Stripe* held = nullptr,
                    std::string_view keep = {}) noexcept;
  // The size evacuate_for() is asked to make room for when the index engine cannot allocate a
  // node: larger than any node, so chunks of every node class are candidates to empty.
  static constexpr std::size_t kIndexNodeRoom = 4096;
  // Chunks emptied per evacuation pass (one scan of the index serves them all).
  static constexpr std::size_t kChunksPerEvacuation = 4;
  // Candidates looked at per chunk evacuated (some hold only index nodes).
  static constexpr std::size_t kCandidatesPerChunk = 4;
  // Evacuations one store() (after kClassEvictions) or publish() (for index nodes) may try
  // before answering out of memory.
  static constexpr int kEvacuations = 4;

  // Unlinks `key` if present (memcached drops the old value when a set fails).
  void drop_key(std::string_view key) noexcept;

  // How many times an operation retries after make_room() before giving up.
  static constexpr int kRoomAttempts = 16;
  // Keys collected per CLOCK batch.
  static constexpr std::size_t kClockBatch = 32;
  // Keys make_room() looks at for dead items under -M.
  static constexpr std::size_t kNoEvictVisits = 4 * kClockBatch;
  // Records make_block() may pass over (second chances, keys changed meanwhile) before it
  // falls back to evacuating chunks.
  static constexpr std::size_t kBlockVisits = 64;
  // Attempts of make_block() that evict from the class before it evacuates chunks. Several,
  // because a concurrent store of the same class may take the block freed for this one.
  static constexpr int kClassEvictions = 8;
  // make_room(): evictions whose room other writers took, per visit it may make.
  static constexpr std::size_t kLostRoomFactor = 8;

  std::unique_ptr<ItemHeap> owned_heap;  // the DRAM heap of a store made without one
  ItemHeap& heap;
  std::unique_ptr<IndexEngine> engine;         // null with a record engine
  std::unique_ptr<RecordEngine> records;       // null with an index engine
  pm::Pool* pool;                              // where cas and flush_all state persist; may be null
  pm::Allocator* records_allocator = nullptr;  // a record engine's pool allocator
  const Clock& clock;
  const StoreOptions options;
  LockStripes stripes;
  RecencyLists recency;          // every published record, per size class, most recent first
  ClassCounters class_counters;  // per size class of the heap
  // memcached's process_started (start - ITEM_UPDATE_INTERVAL - 2): flush_all with an
  // absolute time at or before it cancels flushes rather than flushing.
  const std::int64_t process_started;

  alignas(64) std::atomic<std::uint64_t> cas_counter{0};
  std::atomic<std::uint64_t> cas_reserved{UINT64_MAX};  // a pool's persisted high-water mark
  std::mutex cas_mutex;
  alignas(64) std::atomic<std::size_t> used_bytes{0};  // header+key+value of live records
  std::atomic<std::size_t> memory_limit;  // options.memory_limit_bytes, or cache_memlimit's
  alignas(64) FlushState flush_state;
  std::atomic<std::uint64_t> cmd_flush{0};

  // CLOCK hand in key order, for -M (dead items only): the key the next batch starts from.
  alignas(64) std::mutex hand_mutex;
  std::string hand;
  // The expiry sweep's own hand, so it does not disturb the CLOCK.
  std::mutex sweep_mutex;
  std::string sweep_hand;
};

}  // namespace pmcached::engine

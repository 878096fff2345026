// Store: memcached item semantics, written once, over any IndexEngine.
//
// The store owns item records (header + key + value) and publishes them through the
// index engine. It implements cas uniqueness, expiry (relative up to 30 days, absolute
// beyond, negative = already expired), flush_all with delay, add/replace/append/prepend,
// incr/decr, touch, the meta-protocol item states (stale, win token sent, fetched) and
// memory accounting with eviction.
//
// Results are neutral (StoreStatus); protocol/ turns them into wire text.
//
// Thread safety: every method may be called from any thread. Operations on one key are
// serialised by lock striping (xxHash of the key picks the stripe), so read-modify-write
// commands are atomic per key. Visitors (ItemView callbacks) run with the key's stripe
// lock held: they must copy what they need and must not call back into the store.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine_context.h"
#include "engine/index_engine.h"
#include "engine/pm/slab_classes.h"
#include "engine/record_engine.h"
#include "engine/store/clock.h"

namespace pmcached::engine {

inline constexpr std::size_t kMaxKeyLength = 250;

enum class StoreStatus : std::uint8_t {
  kStored,       // STORED / HD
  kNotStored,    // NOT_STORED / NS
  kExists,       // EXISTS / EX (cas mismatch)
  kNotFound,     // NOT_FOUND / NF / EN
  kDeleted,      // DELETED / HD
  kTouched,      // TOUCHED / HD
  kHit,          // a get found the item
  kNonNumeric,   // incr/decr on a value that is not a decimal u64
  kTooLarge,     // SERVER_ERROR object too large for cache
  kOutOfMemory,  // SERVER_ERROR out of memory storing object
};

// A read-only view of an item, valid only inside the visitor call.
struct ItemView {
  std::string_view key;
  std::string_view value;
  std::uint32_t client_flags = 0;
  std::uint64_t cas = 0;
  std::int64_t exptime = 0;      // absolute Unix seconds; 0 = never expires
  std::int64_t last_access = 0;  // Unix seconds of the last access (before this one)
  bool fetched = false;          // had been fetched before this access
  bool stale = false;            // invalidated by meta delete/set with I
  bool win_token_sent = false;   // a client was already given the recache win (W)
  bool binary_key = false;       // stored by ms with b: echo the key in base64
  std::uint32_t size_class = 1;  // memcached's class number (`stats items`); a paged engine,
                                 // which has no classes, reports every item in class 1
};

using ItemVisitor = std::function<void(const ItemView&)>;

enum class StoreMode : std::uint8_t { kSet, kAdd, kReplace, kAppend, kPrepend, kCas };

struct StoreRequest {
  StoreMode mode = StoreMode::kSet;
  std::string_view key;
  std::string_view value;
  std::uint32_t client_flags = 0;
  std::int64_t exptime = 0;                // as sent by the client (memcached rules)
  std::uint64_t compare_cas = 0;           // kCas, or meta C(token); 0 = no check
  std::optional<std::uint64_t> new_cas;    // meta E(token)
  bool invalidate = false;                 // meta I: store as stale if cas is older
  std::optional<std::int64_t> vivify_ttl;  // meta N(token) in append/prepend mode
  bool binary_key = false;                 // ms b: the item echoes its key in base64
  bool unlink_on_refusal = false;          // drop the old item if this one cannot be
                                           // stored (too large, out of memory): memcached
                                           // does so for ms in every mode (kSet always)
};

struct StoreOutcome {
  StoreStatus status = StoreStatus::kNotStored;
  std::uint64_t cas = 0;       // cas of the stored item (0 if not stored)
  std::size_t value_size = 0;  // size of the stored value (new size after append)
};

struct GetRequest {
  std::string_view key;
  std::optional<std::int64_t> touch_exptime;  // gat/gats, meta T(token); not applied to an
                                              // item this request vivified
  bool bump = true;                           // update fetched/last access (meta u: false)
  std::optional<std::int64_t> vivify_ttl;     // meta N(token): create an empty item on a
                                              // miss, with this exptime
  std::optional<std::int64_t> recache_below;  // meta R(token): win if remaining TTL < token
  bool recache_before_touch = false;          // R compares the exptime before T's
  bool mark_win = true;                       // false: a win is reported but not recorded
  std::optional<std::uint64_t> new_cas;       // meta E(token): cas for a vivified item
  bool count_get = true;                      // count in cmd_get: memcached's gat (text and
                                              // binary) and binary touch count a touch only
  bool touch_miss_is_get_miss = false;        // memcached's mg with T: a hit counts as a touch,
                                              // a miss as a get (cmd_get, get_misses)
};

struct GetOutcome {
  StoreStatus status = StoreStatus::kNotFound;  // kHit or kNotFound
  bool won = false;                             // meta W: this client should recache
  bool stale = false;                           // meta X
  bool token_sent = false;                      // meta Z: a win token was sent earlier
  bool vivified = false;                        // the item was created by this request
  std::int64_t exptime_before = 0;  // the item's exptime before this request (0 if vivified)
  std::int64_t now = 0;             // the clock reading the request was served at
};

struct DeleteRequest {
  std::string_view key;
  std::uint64_t compare_cas = 0;         // meta C(token); 0 = no check
  bool has_compare_cas = false;          // compare even a compare_cas of 0 (meta C0)
  std::optional<std::uint64_t> new_cas;  // meta E(token)
  bool invalidate = false;               // meta I: mark stale instead of removing
  std::optional<std::int64_t> exptime;   // meta T(token), only with invalidate
  bool drop_value = false;               // meta x: empty the value, keep the item
  bool count_cas_mismatch = true;        // a cas mismatch counts in delete_misses (md does in
                                         // memcached; a binary DELETE counts nothing)
};

enum class ArithmeticMode : std::uint8_t { kIncr, kDecr };

struct ArithmeticRequest {
  std::string_view key;
  ArithmeticMode mode = ArithmeticMode::kIncr;
  std::uint64_t delta = 1;
  std::uint64_t compare_cas = 0;              // meta C(token)
  std::optional<std::uint64_t> new_cas;       // meta E(token)
  std::optional<std::int64_t> vivify_ttl;     // meta N(token): create on miss, with this
                                              // exptime
  std::uint64_t initial = 0;                  // meta J(token)
  std::optional<std::int64_t> touch_exptime;  // meta T(token); as in memcached 1.6.18 only
                                              // kept by an update that does not lengthen
                                              // the number (not a created item)
};

struct ArithmeticOutcome {
  StoreStatus status = StoreStatus::kNotFound;  // kStored, kNotFound, kExists, kNonNumeric, ...
  std::uint64_t value = 0;                      // the new value
  std::uint64_t cas = 0;
  std::int64_t exptime = 0;         // absolute; 0 = never
  std::int64_t exptime_before = 0;  // before this request (0 if created)
  bool created = false;             // vivified by this request (meta N)
  std::int64_t now = 0;             // the clock reading the request was served at
};

struct StoreOptions {
  std::size_t memory_limit_bytes = 64u << 20;  // -m
  std::size_t item_size_max = 1u << 20;        // -I: largest item (header + key + value)
  bool evict_when_full = true;                 // false with -M
  std::size_t lock_stripes = 1024;
  // -n, -f, -o slab_chunk_max: the item heap's size classes (a DRAM heap's; a new pool's come
  // from the StoreConfig, an existing pool keeps its own).
  pm::SlabSettings slabs;
};

// One size class in `stats slabs` and `stats items`, with memcached's names (README, "Size
// classes", says what is left out and why).
struct SizeClassStats {
  std::uint32_t id = 0;  // memcached's class number, from 1
  // stats slabs
  std::uint64_t chunk_size = 0, chunks_per_page = 0, total_pages = 0, total_chunks = 0;
  std::uint64_t used_chunks = 0, free_chunks = 0;
  std::uint64_t get_hits = 0, cmd_set = 0, delete_hits = 0, incr_hits = 0, decr_hits = 0;
  std::uint64_t cas_hits = 0, cas_badval = 0, touch_hits = 0;
  // stats items
  std::uint64_t number = 0, age = 0, mem_requested = 0;
  std::uint64_t evicted = 0, evicted_nonzero = 0, evicted_time = 0, outofmemory = 0;
  std::uint64_t reclaimed = 0, expired_unfetched = 0, evicted_unfetched = 0;
};

struct SlabStats {
  // Every class of the item heap, ascending (records larger than slab_chunk_max are counted in
  // the largest class); empty for a record engine, whose records live on its pages.
  std::vector<SizeClassStats> classes;
  std::uint64_t page_size = 0;  // bytes of one slab page
};

// What one call of the background expiry sweep did.
struct SweepResult {
  std::size_t visited = 0;    // keys looked at (memcached's crawler_items_checked)
  std::size_t reclaimed = 0;  // expired or flushed items unlinked
};

// Counters for `stats` and `stats items`.
struct StoreStats {
  std::uint64_t curr_items = 0;
  std::uint64_t total_items = 0;
  std::uint64_t bytes = 0;
  std::uint64_t limit_maxbytes = 0;
  std::uint64_t evictions = 0;
  std::uint64_t expired_unfetched = 0;
  std::uint64_t evicted_unfetched = 0;
  std::uint64_t reclaimed = 0;
  std::uint64_t get_hits = 0, get_misses = 0, get_expired = 0, get_flushed = 0;
  std::uint64_t cmd_get = 0, cmd_set = 0, cmd_touch = 0, cmd_flush = 0;
  std::uint64_t touch_hits = 0, touch_misses = 0;
  std::uint64_t delete_hits = 0, delete_misses = 0;
  std::uint64_t incr_hits = 0, incr_misses = 0, decr_hits = 0, decr_misses = 0;
  std::uint64_t cas_hits = 0, cas_misses = 0, cas_badval = 0;
};

// What recover() found in a persistent pool.
struct RecoveryReport {
  std::uint64_t items_recovered = 0;  // live items indexed
  std::uint64_t bytes_live = 0;       // their record bytes
  std::uint64_t items_dropped = 0;    // corrupt items removed (each one logged by the caller)
  std::uint64_t index_blocks = 0;     // index nodes the engine owns
  std::int64_t time_us = 0;           // how long recovery took
  std::vector<std::string> problems;  // one line per corrupt item or reference
};

class ItemHeap;

class Store {
 public:
  // A volatile store: item records in ordinary memory. The store makes its engine with
  // `make_engine`, handing it a context that reads keys through the store's heap.
  Store(const EngineFactory& make_engine, const Clock& clock, StoreOptions options);
  // A store whose records live in `heap` (a persistent pool's heap); the engine's context names
  // the heap's pool and allocator. The heap outlives the store. Throws what the engine's
  // factory throws (std::runtime_error for a corrupt index).
  Store(const EngineFactory& make_engine, ItemHeap& heap, const Clock& clock, StoreOptions options);
  // A store over an engine that owns its records (a paged engine): the store keeps no item heap,
  // reads records out of the engine and hands it whole new records (record_engine.h). The memory
  // limit does not apply (nothing is evicted); the engine answers kFull when its file is full.
  Store(const RecordEngineFactory& make_engine, const RecordEngineContext& context,
        const Clock& clock, StoreOptions options);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // get/gets/gat/gats/mg. On a hit, `visit` sees the item (after any touch).
  [[nodiscard]] GetOutcome get(const GetRequest& request, const ItemVisitor& visit) noexcept;

  // set/add/replace/append/prepend/cas/ms.
  [[nodiscard]] StoreOutcome store(const StoreRequest& request) noexcept;

  // store() of each request, for requests that arrived together (a server's turn: several
  // clients' sets, a pipeline's run of them): `outcomes[i]` is requests[i]'s, and a key's requests
  // keep their order. Where stores_in_groups(), the plain sets among them are stored as a group:
  // their stripes held once, their recency-list updates fetched together, and on a persistent heap
  // (whose engine then commits in groups, IndexEngine::upsert_batch) made durable together (group
  // commit, docs/TAIL_LATENCY.md): one wait for the write-backs of all their records and one for
  // all their index references, instead of two per set. None is durable, and none should be
  // acknowledged, before this returns.
  void store_batch(std::span<const StoreRequest> requests,
                   std::span<StoreOutcome> outcomes) noexcept;
  // Whether store_batch() saves anything over store(): an engine on a volatile item heap, or on
  // a persistent one with group commit (wort, woart, artcow).
  [[nodiscard]] bool stores_in_groups() const noexcept;

  // delete/md. On success status is kDeleted.
  [[nodiscard]] StoreStatus remove(const DeleteRequest& request) noexcept;

  // incr/decr/ma. incr wraps at 2^64; decr floors at 0.
  [[nodiscard]] ArithmeticOutcome arithmetic(const ArithmeticRequest& request) noexcept;

  // touch: kTouched or kNotFound.
  [[nodiscard]] StoreStatus touch(std::string_view key, std::int64_t exptime) noexcept;

  // flush_all [delay]: items stored before the flush time become invisible then. As in
  // memcached, an absolute delay at or before the process start cancels any flush instead.
  void flush_all(std::int64_t delay_seconds) noexcept;

  // Background sweep: reclaims expired and flushed items, visiting at most `max_visits` keys
  // from where the previous sweep stopped (it wraps around), and no key twice in one call.
  SweepResult reclaim_expired(std::size_t max_visits) noexcept;

  // Visits the live items whose keys are >= `from`, in key order, until `visit` returns false
  // (stats cachedump, lru_crawler metadump). Reads no access bits (nothing is bumped). Each visit
  // holds the key's stripe lock, as for get(); keys are collected in batches, so items stored
  // during the scan may or may not be seen.
  void scan_items(std::string_view from, const std::function<bool(const ItemView&)>& visit);

  // cache_memlimit: a new memory limit for a volatile store; room is made by evicting as stores
  // need it. False (nothing changed) for a persistent pool or a paged engine, whose size is
  // that of the pool or page file they were created with.
  bool set_memory_limit(std::size_t bytes) noexcept;

  // Resets the counters of `stats reset`.
  void reset_stats() noexcept;

  [[nodiscard]] StoreStats stats() const noexcept;
  // memcached's class number of an item of these sizes (1 for a paged engine, which has no
  // classes).
  [[nodiscard]] std::uint32_t class_id(std::size_t key_size, std::size_t value_size,
                                       std::uint32_t client_flags) const noexcept;
  // Per size class (a snapshot; walks the heap's pages under the allocator's lock).
  [[nodiscard]] SlabStats slab_stats() const;
  // The slab settings of the item heap in effect (a reopened pool's own); nullopt for a record
  // engine and for a layout-1 pool (its classes are not memcached's).
  [[nodiscard]] std::optional<pm::SlabSettings> slab_settings() const;
  // The index engine; only for a store over an IndexEngine (tests and tools that inspect it).
  [[nodiscard]] const IndexEngine& engine() const noexcept;
  // What `stats` and `stats engine` report, for either kind of engine.
  [[nodiscard]] std::string_view engine_name() const noexcept;
  [[nodiscard]] EngineCapabilities engine_capabilities() const noexcept;
  [[nodiscard]] std::vector<EngineStat> engine_stats() const;
  [[nodiscard]] const StoreOptions& options() const noexcept;

  // Converts a client exptime (memcached rules) to absolute Unix seconds; 0 = never,
  // a time in the past means "already expired".
  [[nodiscard]] std::int64_t absolute_exptime(std::int64_t client_exptime) const noexcept;
  // The same against a given clock reading: a reply that shows a TTL uses the reading its
  // request was served at (GetOutcome::now), as memcached uses one current_time per command.
  [[nodiscard]] static std::int64_t absolute_exptime(std::int64_t client_exptime,
                                                     std::int64_t now) noexcept;

  // The Unix time the store considers "now".
  [[nodiscard]] std::int64_t now() const noexcept;

  // Persistent stores, once after opening an existing pool and before serving: repairs the
  // engine, checks every item (dropping corrupt ones), rebuilds the allocator's free space,
  // and restores the cas counter and flush_all state from the superblock. Throws
  // std::runtime_error if the index structure itself is corrupt (the pool must not be used).
  [[nodiscard]] RecoveryReport recover();

  // Clean shutdown of a record engine (its checkpoint); nothing for an index engine, whose pool
  // the owner marks clean. Destroying the store without close() is what a crash leaves.
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pmcached::engine

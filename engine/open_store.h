// open_store(): the one front door to a store, in the spirit of LevelDB's DB::Open. A
// StoreConfig names the engine and, for a persistent engine, the pool; open_store() assembles
// pool, allocator, item heap, engine and store, runs recovery, and returns an OpenStore that
// owns them all. The server, the store-level tests and the benchmarks open stores only here.
//
//   engine::StoreConfig config;
//   config.engine = "wort";
//   config.pool_path = "data/pmcached.pool";
//   std::unique_ptr<engine::OpenStore> db = engine::open_store(std::move(config), clock);
//   db->store().store(request);
//   db->close();  // the pool is synced and marked clean
//
// Thread safety: open_store and close on one thread; store() is shared like any Store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine_registry.h"
#include "engine/store/clock.h"
#include "engine/store/store.h"

namespace pmcached::pm {
class Allocator;
class PmRegion;
class Pool;
}  // namespace pmcached::pm

namespace pmcached::engine {

// A problem with what was asked for that the caller must fix (an unknown engine, a pool made
// by another engine, a corrupt pool). The message is one line, fit for a user.
class StoreOpenError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct StoreConfig {
  // Out of line: PmRegion is only declared here.
  StoreConfig();
  ~StoreConfig();
  StoreConfig(StoreConfig&&) noexcept;
  StoreConfig& operator=(StoreConfig&&) noexcept;

  std::string engine{kDefaultEngine};

  // The store's limits. For a persistent engine memory_limit_bytes is replaced by
  // item_share_of_heap of the pool's heap (the rest is for index nodes and the allocator's
  // size-class slack, so eviction starts before allocations fail).
  StoreOptions options;
  double item_share_of_heap = 0.85;

  // Persistent engines: the pool file, created with pool_bytes if it does not exist...
  std::string pool_path;
  std::size_t pool_bytes = 64u << 20;
  // ...or, instead of a file, a region (tests: in memory, or under the crash simulator).
  std::unique_ptr<pm::PmRegion> region;

  // Persistence settings, applied process-wide when given (pm::configure): "auto", "clwb",
  // "clflushopt" or "clflush", and an emulated write latency per flushed line.
  std::optional<std::string> flush_instruction;
  std::uint32_t write_latency_ns = 0;

  // Paged engines: the page file (default: the pool's path + ".pages"), page size, buffer pool,
  // page table, eviction policy and redo log size.
  PagedOptions paged;
};

// What `stats pm` reports about a persistent store.
struct PmStats {
  std::string pool_path;  // empty for a region
  std::uint64_t pool_bytes = 0;
  bool real_pm = false;        // a DAX mapping rather than emulated PM
  std::string_view opened_as;  // "new", "cleanly closed" or "crashed"
  std::string_view flush_instruction;
  std::uint32_t write_latency_ns = 0;
  std::uint64_t heap_bytes = 0;
  std::uint64_t heap_bytes_in_use = 0;
  std::uint64_t heap_blocks_in_use = 0;
  std::uint64_t heap_chunks_in_use = 0;
  std::uint64_t heap_chunks_total = 0;
  // Flushes and fences per kind of operation (insert, update, delete, ...).
  struct Persists {
    std::string_view kind;
    std::uint64_t operations = 0;
    std::uint64_t lines_flushed = 0;
    std::uint64_t fences = 0;
  };
  std::vector<Persists> persists;
};

class OpenStore {
 public:
  virtual ~OpenStore() = default;

  [[nodiscard]] virtual Store& store() noexcept = 0;
  [[nodiscard]] virtual const EngineInfo& engine_info() const noexcept = 0;
  // What recovery found; nullopt for a volatile engine.
  [[nodiscard]] virtual const std::optional<RecoveryReport>& recovery() const noexcept = 0;
  // nullopt for a volatile engine.
  [[nodiscard]] virtual std::optional<PmStats> pm_stats() const = 0;
  // The pool and its allocator, for tests and tools that inspect them; nullptr for a volatile
  // engine. The server reads pm_stats() instead.
  [[nodiscard]] virtual pm::Pool* pool() const noexcept = 0;
  [[nodiscard]] virtual pm::Allocator* allocator() const noexcept = 0;

  // Clean shutdown: the store is closed, a pool synced and marked clean. Destroying an
  // OpenStore without close() leaves the pool as a crash would (its data is kept).
  virtual void close() = 0;
};

// Throws StoreOpenError for what the caller must fix, std::exception for other failures.
[[nodiscard]] std::unique_ptr<OpenStore> open_store(StoreConfig config, const Clock& clock);

}  // namespace pmcached::engine

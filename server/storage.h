// Storage: the store and everything behind it for the engine chosen at start-up.
//
// For a volatile engine: the engine and a store with records in ordinary memory. For a
// persistent engine: the pool file (--pool, -m MB when new), its allocator, the item heap, the
// engine and the store; the pool is recovered before serving (a new one trivially), and close()
// marks it clean after syncing it.
//
// Thread safety: open/close on the start-up thread; store() is shared by the workers.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "config/options.h"
#include "engine/clock.h"
#include "engine/engine_registry.h"
#include "engine/item_heap.h"
#include "engine/pm/allocator.h"
#include "engine/pm/pool.h"
#include "engine/store.h"

namespace pmcached::server {

// A start-up problem that is the user's to fix (wrong engine for the pool, corrupt pool):
// main prints it as one line and exits with status 2.
class StorageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Storage {
 public:
  // Throws StorageError for configuration problems, std::exception for others.
  Storage(const config::Options& options, const engine::Clock& clock);
  ~Storage();

  [[nodiscard]] engine::Store& store() noexcept { return *store_; }
  [[nodiscard]] const engine::EngineInfo& engine_info() const noexcept { return *info_; }
  [[nodiscard]] pm::Pool* pool() const noexcept { return pool_.get(); }
  [[nodiscard]] pm::Allocator* allocator() const noexcept { return allocator_.get(); }
  // What recovery found (persistent engines).
  [[nodiscard]] const std::optional<engine::RecoveryReport>& recovery() const noexcept {
    return recovery_;
  }

  // Clean shutdown: the store is closed, the pool synced and marked clean.
  void close();

 private:
  const engine::EngineInfo* info_;
  std::unique_ptr<pm::Pool> pool_;
  std::unique_ptr<pm::Allocator> allocator_;
  std::unique_ptr<engine::ItemHeap> heap_;
  std::unique_ptr<engine::Store> store_;
  std::optional<engine::RecoveryReport> recovery_;
};

}  // namespace pmcached::server

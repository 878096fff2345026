// open_storage(): the store the command line asks for, through engine::open_store. Maps
// Options to a StoreConfig (engine, pool path and size, flush settings, limits), creates the
// default pool's directory, and logs what was opened and what recovery found.
//
// Thread safety: call once, on the start-up thread.
#pragma once

#include <memory>
#include <stdexcept>

#include "config/options.h"
#include "engine/open_store.h"
#include "engine/store/clock.h"

namespace pmcached::server {

// A start-up problem that is the user's to fix (wrong engine for the pool, corrupt pool):
// main prints it as one line and exits with status 2.
class StorageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws StorageError for configuration problems, std::exception for others.
[[nodiscard]] std::unique_ptr<engine::OpenStore> open_storage(const config::Options& options,
                                                              const engine::Clock& clock);

}  // namespace pmcached::server

// Test support for the redo log: a pool in DRAM (optionally watched by a CrashSimulator) with a
// log in it, units as plain values, and reopening from an image the way a restart would.
//
// Thread safety: a LogInstance is used from one thread, except its log's append() and commit().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/buffer/redo_log.h"
#include "engine/pm/allocator.h"
#include "engine/pm/crash_simulator.h"
#include "engine/pm/pool.h"

namespace pmcached::buffer::testing {

inline constexpr std::size_t kPoolBytes = pm::kMinPoolSize;
inline constexpr std::uint64_t kPageFileId = 0x5EED0001;

// A unit's records as values: {type, body}.
using Records = std::vector<std::pair<std::uint16_t, std::string>>;

// A unit as appended or as replayed.
struct Unit {
  Lsn end = 0;
  Records records;
  friend bool operator==(const Unit&, const Unit&) = default;
};

// Views of `records` for RedoLog::append (valid while `records` lives).
[[nodiscard]] std::vector<LogRecord> views(const Records& records);

// `count` records of the given body sizes with contents derived from `tag`, so that no two
// units of a test hold the same bytes.
[[nodiscard]] Records make_records(std::uint32_t tag, const std::vector<std::size_t>& sizes);

struct LogInstance {
  std::unique_ptr<pm::Pool> pool;
  std::unique_ptr<pm::Allocator> allocator;
  std::unique_ptr<RedoLog> log;

  // A new pool with a new log of `log_bytes`.
  static LogInstance fresh(std::size_t log_bytes, pm::CrashSimulator* sim = nullptr);
  // The pool restarted from `image` with the allocator rebuilt from the log's blocks (a failure
  // is reported with ADD_FAILURE) and the log at `root` opened, not replayed.
  static LogInstance restart(const std::vector<char>& image, std::uint64_t root,
                             pm::CrashSimulator* sim = nullptr);

  // Appends `records` as one unit; on 0 (no room) checkpoints at the durable LSN and retries
  // once, as an engine would after writing its pages. Returns the unit (end 0 if it failed).
  Unit append(const Records& records);
  // Replays and returns the visited units.
  std::vector<Unit> replay();
  // The pool's bytes as they are now (working memory, flushed or not).
  [[nodiscard]] std::vector<char> memory() const;
};

}  // namespace pmcached::buffer::testing

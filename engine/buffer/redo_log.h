// RedoLog: the paged engines' redo log, a circular region in the PM pool.
//
// A command's changes are appended as one unit (one or more records); commit(lsn) returns once
// every unit up to `lsn` is flushed and fenced. Concurrent committers share one flush and fence
// (group commit): the first to find the durable LSN behind its own flushes everything written
// contiguously so far; the others wait for it and find their units already durable.
//
// Layout in the pool: a root block (magic, layout version, region offset and size, the page
// file's id, its double-write buffer's root, the checkpoint LSN = where replay starts, a checksum
// of the immutable part; the LSN is written with one failure-atomic 8-byte store) and the region. A
// unit is {u64 lsn of its first byte, u32 length, u32 checksum (of the unit with this field 0,
// seeded per log)} then records {u16 type, u16 reserved, u32 length, body}, padded to 8 bytes;
// a unit is a multiple of 16 bytes. A unit never wraps: when it does not fit before the region's
// end, a padding unit fills the rest. Replay visits the units from the checkpoint LSN while each
// has the expected LSN and a valid checksum; the first that does not (never written, torn, or
// left from an earlier lap) ends the log. Units are made durable in LSN order, so an
// acknowledged unit is never behind a torn one. After replay the log continues one lap further
// in LSN (a 16-byte lap skip unit), so no byte left behind the end can match an LSN the log will
// expect again. Byte layout: redo_log_format.h; history: docs/LAYOUTS.md.
//
// The log knows nothing of pages: record types and bodies are the engine's. LSNs grow forever
// (byte positions in an endless log); position in the region = lsn % size.
//
// Thread safety: append(), commit() and checkpoint() may be called from any thread, at the same
// time. replay() runs alone, on an opened log before its first append (before serving).
// Persistence counters: the log's flushes and fences count as pm::OpKind::kLog.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/buffer/buffer_types.h"

namespace pmcached::pm {
class Pool;
class Allocator;
}  // namespace pmcached::pm

namespace pmcached::buffer {

class RedoLogError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One record as appended and as replayed.
struct LogRecord {
  std::uint16_t type = 0;
  std::span<const std::byte> body;
};

struct RedoLogStats {
  std::uint64_t units = 0;
  std::uint64_t bytes_appended = 0;
  std::uint64_t commits = 0;        // commit() calls
  std::uint64_t group_flushes = 0;  // flush + fence rounds (commits / group_flushes = group size)
  std::uint64_t checkpoints = 0;
  std::uint64_t used_bytes = 0;  // now: appended since the checkpoint LSN
  std::uint64_t capacity = 0;
};

class RedoLog {
 public:
  // A new log of `bytes` (rounded to 4 KiB) in blocks from `allocator`, for the page file
  // `page_file_id`. root_offset() is what the engine keeps in its pool root; the log's root also
  // keeps `double_write_root`, the root of the page file's DoubleWriteBuffer (0: none).
  static std::unique_ptr<RedoLog> create(pm::Pool& pool, pm::Allocator& allocator,
                                         std::size_t bytes, std::uint64_t page_file_id,
                                         std::uint64_t double_write_root = 0);
  // The log whose root block is at `root_offset`. Throws RedoLogError (one line) if the root is
  // corrupt or names another page file.
  static std::unique_ptr<RedoLog> open(pm::Pool& pool, std::uint64_t root_offset,
                                       std::uint64_t page_file_id);
  ~RedoLog();
  RedoLog(const RedoLog&) = delete;
  RedoLog& operator=(const RedoLog&) = delete;

  [[nodiscard]] std::uint64_t root_offset() const noexcept;
  [[nodiscard]] std::uint64_t double_write_root() const noexcept;
  // The pool blocks the log owns (root and region), for the allocator's start-up rebuild: mark
  // them as pm::BlockUse::kIndex (so that item-chunk evacuation never picks them).
  void for_each_block(const std::function<void(std::uint64_t offset)>& visit) const;

  // Appends `records` as one unit and returns its end LSN (not yet durable). Returns 0 if the
  // unit does not fit in the free part of the region: the engine checkpoints and retries.
  // Throws RedoLogError if it could never fit (larger than half the region), or if the log was
  // opened and not replayed yet.
  [[nodiscard]] Lsn append(std::span<const LogRecord> records);
  // Returns once every unit ending at or before `lsn` is durable. Throws RedoLogError if `lsn` is
  // beyond end_lsn().
  void commit(Lsn lsn);
  // The LSN up to which the log is durable.
  [[nodiscard]] Lsn durable_lsn() const noexcept;
  // The end of the last appended unit.
  [[nodiscard]] Lsn end_lsn() const noexcept;
  // Where replay starts (the last checkpoint).
  [[nodiscard]] Lsn checkpoint_lsn() const noexcept;

  // True when more than `fraction` of the region is in use: time for a checkpoint.
  [[nodiscard]] bool wants_checkpoint(double fraction = 0.5) const noexcept;
  // The log half of a checkpoint, after the engine wrote and fsynced every page changed before
  // `lsn`: replay will start at `lsn` (one failure-atomic persisted store) and the space before
  // it is free. `lsn` is a unit boundary (an end LSN from append() or replay(), or
  // durable_lsn()) at most durable_lsn(), RedoLogError otherwise; at or before checkpoint_lsn()
  // it changes nothing (another thread's checkpoint got further).
  void checkpoint(Lsn lsn);

  // Visits every durable unit from the checkpoint LSN in order: `visit(end_lsn, records)`.
  // Afterwards appends continue after the last valid unit (one lap further in LSN, see above) and
  // everything up to end_lsn() is durable. Returns the units visited.
  std::size_t replay(
      const std::function<void(Lsn end_lsn, std::span<const LogRecord> records)>& visit);

  [[nodiscard]] RedoLogStats stats() const noexcept;

 private:
  struct Impl;
  explicit RedoLog(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pmcached::buffer

// RedoLogTail: the DRAM bookkeeping of the redo log's append side — where the next unit goes,
// which units are still being written, the contiguous written LSN, and how much of the region
// is in use. It touches no persistent memory (redo_log.cc writes and flushes).
//
// Space: the units from the checkpoint LSN to the end occupy `end - checkpoint - skipped` bytes
// of the region, where `skipped` is one region size per lap skip (redo_log_format.h) between
// them: a lap skip advances the LSN by a lap without using the lap's bytes. A reservation fits
// while that stays within the region size, so a unit never overwrites the unit at the
// checkpoint LSN's position.
//
// Written LSN: units are reserved in LSN order but may finish writing in any order; written()
// is the end of the longest prefix of reserved units that have all finished, which is what a
// group commit may flush.
//
// Thread safety: reserve(), finish(), wait_written() and the readers from any thread;
// set_checkpoint() from one thread at a time (the log's checkpoint mutex); reset() alone.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "engine/buffer/buffer_types.h"

namespace pmcached::buffer {

class RedoLogTail {
 public:
  struct Reservation {
    Lsn start = 0;              // the padding unit's first byte if padding > 0, else the unit's
    std::uint64_t padding = 0;  // bytes up to the region's end, filled by a padding unit
    Lsn unit = 0;               // the unit's first byte: start + padding
    Lsn end = 0;                // unit + its length
    std::uint64_t ticket = 0;   // for finish()
  };

  explicit RedoLogTail(std::uint64_t region_size) noexcept : size_(region_size) {}

  // The state after creating a log or replaying one: nothing in flight, everything up to `end`
  // written and durable, `skips` = the LSNs of the lap skips in [checkpoint, end).
  void reset(Lsn end, Lsn checkpoint, std::vector<Lsn> skips);

  // Reserves `length` bytes (a multiple of 16, at most half the region) for one unit, with a
  // padding unit before it if it would cross the region's end. nullopt if it does not fit.
  [[nodiscard]] std::optional<Reservation> reserve(std::uint64_t length);
  // The unit of `ticket` (and its padding) is fully written.
  void finish(std::uint64_t ticket);
  // Blocks until written() >= lsn; lsn must be at most end().
  void wait_written(Lsn lsn) const noexcept;

  [[nodiscard]] Lsn written() const noexcept { return written_.load(std::memory_order_acquire); }
  [[nodiscard]] Lsn end() const noexcept { return end_.load(std::memory_order_acquire); }
  [[nodiscard]] Lsn checkpoint() const noexcept {
    return checkpoint_.load(std::memory_order_acquire);
  }
  // Bytes of the region in use (approximate while others reserve).
  [[nodiscard]] std::uint64_t used() const noexcept;

  // True if `lsn` can be a checkpoint: at or after the current one, at most `limit`, and not
  // inside the LSNs a lap skip jumped over.
  [[nodiscard]] bool valid_checkpoint(Lsn lsn, Lsn limit) const;
  // Frees the space before `lsn` (valid_checkpoint(lsn) held; the caller persisted it).
  void set_checkpoint(Lsn lsn);

 private:
  struct Pending {
    Lsn end;
    bool done;
  };

  const std::uint64_t size_;
  mutable std::mutex mutex_;
  std::deque<Pending> pending_;  // reserved, in LSN order, from ticket first_ticket_
  std::uint64_t first_ticket_ = 0;
  std::vector<Lsn> skips_;  // lap skips in [checkpoint, end), ascending
  std::atomic<Lsn> end_{0};
  std::atomic<Lsn> written_{0};
  std::atomic<Lsn> checkpoint_{0};
  std::atomic<std::uint64_t> skipped_{0};  // size_ * skips_.size()
};

}  // namespace pmcached::buffer

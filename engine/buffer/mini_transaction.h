// MiniTransaction: the page changes of one command, logged as one redo unit.
//
// An engine moves every page it is about to change (latched exclusively) into the transaction
// and changes it only through the returned PageChanges. finish() then appends one unit to the
// redo log: for each page either its changed byte ranges (physical redo) or, when the page is
// new or rebuilt (mark_whole), its whole image without its zero blocks. Replay applies ranges to
// the page as the file holds it, which is never torn: the engine writes pages through a
// DoubleWriteBuffer and repairs them from it before replay (double_write.h). Then it stamps every
// page's LSN, marks it dirty and releases the latches, in that order: a page cannot be written back
// (WAL rule: only after the log is durable up to its LSN) before its change is in the log. The
// caller commits the returned LSN (RedoLog::commit) before acknowledging the command.
//
// Record types in the log:
// - kPageSparseImage {u64 page id, u32 blocks, then blocks x {u32 offset, u32 length, bytes}}: a
//   page logged whole, as the runs of 64-byte-aligned blocks after the header that hold a
//   non-zero byte (the zero ones, such as the free space of a page just split, are left out);
// - kPageRanges {u64 page id, u32 moves, u32 ranges, then moves x {u32 to, u32 from, u32 length},
//   then ranges x {u32 offset, u32 length, bytes}};
// (Type 1 was a whole image with every byte, in logs of redo layout v2 and before, which are
// refused at open.)
// replay() puts an image in place whatever the file holds (a sparse one over a zeroed page), and
// applies a kPageRanges record to a page whose LSN is older than the unit's: its moves in order
// (memmove), then its ranges.
//
// Without a log (tests, volatile use) finish() only marks the pages dirty.
//
// Thread safety: one transaction belongs to one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/buffer/buffer_manager.h"
#include "engine/buffer/page_changes.h"
#include "engine/buffer/redo_log.h"

namespace pmcached::buffer {

inline constexpr std::uint16_t kPageRanges = 2;
inline constexpr std::uint16_t kPageSparseImage = 3;

class MiniTransaction {
 public:
  MiniTransaction(BufferManager& buffers, RedoLog* log) noexcept;
  // Releases whatever finish() did not (an engine that changed nothing may just drop it).
  ~MiniTransaction();
  MiniTransaction(const MiniTransaction&) = delete;
  MiniTransaction& operator=(const MiniTransaction&) = delete;

  // Takes `page` (latched exclusively) until finish(); changes to it go through the result.
  // A page already in the transaction returns its existing changes.
  PageChanges& track(PageGuard&& page);
  // The same for a page just made with BufferManager::fix_new(): logged whole.
  PageChanges& track_new(PageGuard&& page);
  // The changes of page `id` if the transaction holds it, else nullptr.
  [[nodiscard]] PageChanges* find(PageId id) noexcept;
  // The guard of a tracked page (to fix its children or read it).
  [[nodiscard]] PageGuard& guard(const PageChanges& changes) noexcept;

  // Logs, stamps, marks dirty and releases; returns the unit's end LSN (0 if nothing changed or
  // there is no log). Returns 0 without releasing anything if the log had no room (RedoLog::append
  // returned 0) — the engine prevents that by checkpointing before a command starts.
  [[nodiscard]] Lsn finish();

  // True if finish() found no room in the log and still holds the pages.
  [[nodiscard]] bool pending() const noexcept { return !entries_.empty(); }

  // Replays one unit of page records at `end_lsn` (recovery).
  static void replay(BufferManager& buffers, Lsn end_lsn, std::span<const LogRecord> records);

 private:
  struct Entry {
    PageGuard guard;
    PageChanges changes;
  };
  BufferManager& buffers_;
  RedoLog* log_;
  std::vector<std::unique_ptr<Entry>> entries_;
  std::vector<std::byte> scratch_;  // the unit's record bodies
};

}  // namespace pmcached::buffer

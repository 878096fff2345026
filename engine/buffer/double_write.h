// DoubleWriteBuffer: every page the buffer manager writes to the page file is first persisted
// whole in a ring of slots in the PM pool, so that a write torn by a power failure can be
// repaired at the next start (InnoDB's doublewrite buffer, in PM).
//
// Why: the redo log holds byte ranges (physical redo), and replaying them needs each page in the
// file intact at some LSN. Without this buffer a page's first change after a checkpoint had to
// be logged whole (a 64 KiB image for a 100-byte SET); with it, a write-back costs one copy into
// PM and the log holds only what changed.
//
// Protocol of write(id, page):
//   1. take the next slot; when every slot has been used since the last fdatasync, wait for the
//      writes still in flight, fdatasync the page file, and start the ring again — a slot is
//      reused only once the write made from it is durable;
//   2. copy the page into the slot, then its header {page id, LSN, checksum of the header's
//      fields and the page}; flush both, one fence;
//   3. write the page to the file.
// A crash before the fence of step 2 leaves the file's page untouched (the write had not begun);
// after it, the slot holds the whole page. repair() (at start, before the log is replayed):
// for every slot whose checksum holds, if the file's page is torn (bad checksum) or older
// (lower LSN) than the slot's, the slot's image is written there; then fdatasync. Among several
// slots of one page the newest wins. A slot image is a state the page really had, written only
// after the log was durable up to its LSN (the WAL rule), so installing it is what the write
// would have done.
// A page of zeros in the file (extended, its first write lost) counts as torn. A slot naming a
// page past the file's end is skipped: the extension did not survive either, so the page was
// made after the last checkpoint's fdatasync, and replay rebuilds it from the image the log
// holds of it (a new page is logged whole) without reading the file.
//
// Layout in the pool: a root block (one 64-byte line: magic PMDBLWRT, layout version, slot count,
// page size, region offset, page file id, seed, checksum of the line before it) and a region of
// `slots` x (64-byte slot header + page) from the allocator. Byte layout in double_write.cc;
// history in docs/LAYOUTS.md.
//
// Thread safety: write() from any number of threads at once; repair() alone, before any write().
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "engine/buffer/buffer_types.h"
#include "engine/buffer/page_file.h"

namespace pmcached::pm {
class Pool;
class Allocator;
class PmRegion;
}  // namespace pmcached::pm

namespace pmcached::buffer {

struct DoubleWriteStats {
  std::uint64_t slots = 0;
  std::uint64_t writes = 0;          // pages written through the buffer
  std::uint64_t syncs = 0;           // fdatasyncs made to reuse the ring
  std::uint64_t pages_repaired = 0;  // by the last repair()
};

class DoubleWriteBuffer {
 public:
  // The ring's size in the pool: slots = kDoubleWriteBytes / page size, at least kMinSlots.
  static constexpr std::size_t kMinSlots = 8;

  // A new buffer in blocks from `allocator`, for `file`. Throws std::runtime_error if the pool
  // has no room.
  static std::unique_ptr<DoubleWriteBuffer> create(pm::Pool& pool, pm::Allocator& allocator,
                                                   PageFile& file);
  // The buffer whose root block is at `root_offset`. Throws std::runtime_error (one line) if the
  // root is corrupt, or was made for another page file or page size.
  static std::unique_ptr<DoubleWriteBuffer> open(pm::Pool& pool, std::uint64_t root_offset,
                                                 PageFile& file);
  ~DoubleWriteBuffer();
  DoubleWriteBuffer(const DoubleWriteBuffer&) = delete;
  DoubleWriteBuffer& operator=(const DoubleWriteBuffer&) = delete;

  [[nodiscard]] std::uint64_t root_offset() const noexcept { return root_offset_; }
  // The pool blocks it owns (root and region), for the allocator's start-up rebuild.
  void for_each_block(const std::function<void(std::uint64_t offset)>& visit) const;

  // Writes `page` (page size bytes, I/O-aligned, checksum already stamped) to page `id` of the
  // file, as above.
  void write(PageId id, const std::byte* page);
  // Installs the newest intact slot image of every page the file holds torn or older, and
  // fdatasyncs. Returns the pages written.
  std::size_t repair();

  [[nodiscard]] DoubleWriteStats stats() const noexcept;

 private:
  DoubleWriteBuffer(pm::PmRegion& region, std::uint64_t root_offset, std::uint64_t region_offset,
                    std::uint32_t slots, std::uint64_t seed, PageFile& file);
  [[nodiscard]] std::byte* slot(std::uint32_t i) const noexcept;
  std::uint32_t take_slot();
  void persist_image(std::byte* at, PageId id, const std::byte* page) noexcept;

  pm::PmRegion& region_;
  const std::uint64_t root_offset_;
  const std::uint64_t region_offset_;
  const std::uint32_t slots_;
  const std::uint64_t seed_;
  PageFile& file_;
  const std::size_t page_size_;

  mutable std::mutex mutex_;
  std::condition_variable idle_;  // in_flight_ reached 0
  std::uint32_t used_ = 0;        // slots taken since the last fdatasync
  std::uint32_t in_flight_ = 0;   // writes between take_slot() and the file write's end
  std::uint64_t writes_ = 0;      // under mutex_
  std::uint64_t syncs_ = 0;       // under mutex_
  std::uint64_t pages_repaired_ = 0;
};

}  // namespace pmcached::buffer

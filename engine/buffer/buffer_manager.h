// BufferManager: DRAM frames over a PageFile, with fix/unfix, pins, per-frame latches, dirty
// tracking, write-back, one of two page tables and one of five replacement policies.
//
// Fixing a page pins its frame (a pinned frame is never evicted) and latches it shared or
// exclusive; the PageGuard undoes both. A miss takes a free frame or evicts the victim the
// replacement policy picks (writing it back first if dirty, after the redo log is durable up to
// the page's LSN: the WAL rule), then reads the page and checks its checksum. A page of zeros
// (the file grew past it but it was never written) reads as an empty page: kind 0, LSN 0.
//
// Page tables (--page-table):
//   hash     page id -> frame through an extendible hash table on xxHash (seed 003 §buffer pool).
//   swizzle  seed 001 ch. 1 (Zero): a child reference (an 8-byte word in an inner page) of a
//            resident parent is replaced, when fixed through fix_child(), by a tagged frame
//            reference, so the next traversal reaches the child without the page table. The hash
//            table stays for fixes by id (the root, siblings, unswizzled references). Only a
//            page reached through swizzled references (the root, or a page swizzled in its
//            parent) gets its children swizzled; only a frame without swizzled children is
//            evicted, and its eviction unswizzles the parent's reference first; a page image
//            written to the file never holds a tagged reference (write-back unswizzles a copy).
// With either table the root (set_root) is never evicted once resident, as in Zero.
// The rules seed 001 leaves open (docs/BUFFER_MANAGER.md): the evictor only try-latches (the
// victim exclusively, then its parent shared), so it never waits in a lock order opposite to a
// traversal's parent -> child coupling; a pin counts fixes (guards), not swizzled references;
// an engine that moves, copies or removes child references (a split, a merge, a separator
// insert) calls unswizzle_children() on the page first, so a tagged reference never moves.
// Child references are read and written as atomic 8-byte words (std::atomic_ref): under a
// shared latch a reference may be swizzled or unswizzled by other threads at any time.
//
// Thread safety: every method may be called from any thread. A fix that races an eviction of the
// same page retries and never returns another page's frame. Fixing more than one page at a time
// follows the engine's latch order (parent before child, left before right).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/buffer/buffer_types.h"

namespace pmcached::buffer {

class PageFile;
class BufferManager;

// Every frame is pinned and none can be evicted.
class BufferFullError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class LatchMode : std::uint8_t { kShared, kExclusive };

struct BufferOptions {
  std::size_t frames = 1024;  // --buffer-pool-mb / page size
  PageTableKind page_table = PageTableKind::kHash;
  EvictionKind eviction = EvictionKind::kClock;
  std::uint64_t seed = 1;
  // A fix that finds no frame to free (all pinned or unevictable) keeps trying while other
  // threads may release one, and throws BufferFullError after this long.
  std::uint32_t full_after_ms = 100;
  // The engine's inner-page layout: visits the child references (aligned 8-byte words) of the
  // page at `page`; visits nothing for a leaf or any other page. Required for kSwizzle.
  std::function<void(std::byte* page, const std::function<void(std::uint64_t& slot)>& visit)>
      child_slots;
  // The WAL rule: called before a dirty page whose header LSN is `lsn` is written to the file;
  // returns once the redo log is durable up to `lsn`. Empty: nothing to wait for.
  std::function<void(Lsn lsn)> flush_log_to;
  // Writes a page copy (WAL rule kept, checksum stamped, I/O-aligned) to page `id` of the file.
  // Empty: PageFile::write. The paged engines write through their DoubleWriteBuffer, which makes
  // a torn write repairable (double_write.h).
  std::function<void(PageId id, const std::byte* page)> write_page;
};

struct BufferStats {
  std::uint64_t fixes = 0;  // fixes that returned a page: hits + misses
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t evictions = 0;
  std::uint64_t write_backs = 0;
  std::uint64_t swizzles = 0;
  std::uint64_t unswizzles = 0;
  std::uint64_t hash_probes = 0;      // page-table slots looked at, summed over fixes by id
  std::uint64_t swizzled_fixes = 0;   // fixes that followed a swizzled reference (no probe)
  std::uint64_t fix_retries = 0;      // fixes that lost a race with an eviction and retried
  std::uint64_t frames_examined = 0;  // by the replacement policy
  std::uint64_t dirty_frames = 0;     // now
  std::uint64_t resident_pages = 0;   // now
};

// A fixed and latched page. Move-only; releasing (or destroying) it unlatches and unpins.
class PageGuard {
 public:
  PageGuard() = default;
  PageGuard(PageGuard&& other) noexcept;
  PageGuard& operator=(PageGuard&& other) noexcept;
  ~PageGuard() { release(); }
  PageGuard(const PageGuard&) = delete;
  PageGuard& operator=(const PageGuard&) = delete;

  [[nodiscard]] explicit operator bool() const noexcept { return owner_ != nullptr; }
  [[nodiscard]] PageId id() const noexcept { return id_; }
  [[nodiscard]] FrameId frame() const noexcept { return frame_; }
  [[nodiscard]] LatchMode mode() const noexcept { return mode_; }
  // The page's bytes (page_size() of them); write only under an exclusive latch.
  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] PageHeader& header() const noexcept {
    return *reinterpret_cast<PageHeader*>(data_);
  }
  // Exclusive latch only: the page was changed by the log record ending at `lsn`: stores `lsn`
  // in its header and marks the frame dirty.
  void mark_dirty(Lsn lsn) noexcept;

  void release() noexcept;

 private:
  friend class BufferManager;
  PageGuard(BufferManager* owner, FrameId frame, PageId id, LatchMode mode,
            std::byte* data) noexcept
      : owner_(owner), frame_(frame), id_(id), mode_(mode), data_(data) {}

  BufferManager* owner_ = nullptr;
  FrameId frame_ = kNoFrame;
  PageId id_ = kNoPage;
  LatchMode mode_ = LatchMode::kShared;
  std::byte* data_ = nullptr;
};

// Bytes past a page's start that an optimistic read may touch, whatever the page holds: the
// pool's memory extends this far past its last frame.
inline constexpr std::size_t kOptimisticReach = std::size_t{1} << 20;

// A page read with neither pin nor latch (seed 004 §3.6; LeanStore's optimistic latching).
// Until BufferManager::validate() says otherwise, its bytes may be changing, or belong to
// another page by now: whatever is computed from them counts only if validate() holds
// afterwards, and the code reading them must stay within kOptimisticReach of data() and end
// whatever it finds there. Copyable; holds nothing.
class OptimisticPage {
 public:
  OptimisticPage() = default;

  [[nodiscard]] explicit operator bool() const noexcept { return data_ != nullptr; }
  [[nodiscard]] FrameId frame() const noexcept { return frame_; }
  [[nodiscard]] const std::byte* data() const noexcept { return data_; }

 private:
  friend class BufferManager;
  OptimisticPage(FrameId frame, std::uint64_t version, const std::byte* data) noexcept
      : frame_(frame), version_(version), data_(data) {}

  FrameId frame_ = kNoFrame;
  std::uint64_t version_ = 0;
  const std::byte* data_ = nullptr;
};

class BufferManager {
 public:
  BufferManager(PageFile& file, BufferOptions options);
  // Does not write anything back: call write_back_all() first for a clean close.
  ~BufferManager();
  BufferManager(const BufferManager&) = delete;
  BufferManager& operator=(const BufferManager&) = delete;

  // Fixes page `id` (1 .. file page_count() - 1) and latches it in `mode`. Throws
  // BufferFullError if no frame can be freed, PageFileError if the page is corrupt or unreadable.
  [[nodiscard]] PageGuard fix(PageId id, LatchMode mode);

  // Fixes the child whose reference is the 8-byte word `*slot` inside `parent`'s page (latched by
  // the caller, shared or exclusive). kHash: fix(child_id(*slot)). kSwizzle: a swizzled reference
  // leads straight to its frame; a plain one is fixed by id and then swizzled in place with one
  // atomic 8-byte compare-and-swap (so readers under a shared parent latch see either form).
  [[nodiscard]] PageGuard fix_child(const PageGuard& parent, std::uint64_t* slot, LatchMode mode);

  // Optimistic reads: no pin, no latch, no write to the frame. Empty when the page cannot be
  // read that way (not resident, latched exclusively; fix() it then); a read counts as a hit.
  // For the page `id`:
  [[nodiscard]] OptimisticPage read_optimistic(PageId id) const;
  // For the child whose reference is the word at `slot` inside `parent`'s page; also empty if
  // `parent` changed since it was read, or (kSwizzle) the reference is not swizzled yet, so that
  // fix_child() swizzles it for the next reader.
  [[nodiscard]] OptimisticPage read_child_optimistic(const OptimisticPage& parent,
                                                     const std::uint64_t* slot) const;
  // True if no exclusive latch was taken on the page (by a writer, its loader or its evictor)
  // since it was read: what was read from it is one consistent state of page `id`.
  [[nodiscard]] bool validate(const OptimisticPage& page) const noexcept;

  // A page the engine has just allocated (its id may be past the file's end; the file is extended):
  // zeroed, not read, latched exclusively and dirty. Throws BufferFullError as fix() does, and
  // PageFileError if the file cannot grow to hold it (its maximum, or a full file system).
  [[nodiscard]] PageGuard fix_new(PageId id);

  // The engine freed page `id`: drops it from the pool without writing it back. It must not be
  // fixed by anyone, nor swizzled in a parent (unswizzle the parent first).
  void drop(PageId id);

  // The page id a child reference stands for, swizzled or not. Exact while the page holding
  // the reference is latched exclusively; under a shared latch a swizzled child may be evicted
  // concurrently (fix_child() copes with that, a value read earlier cannot).
  [[nodiscard]] PageId child_id(std::uint64_t slot) const noexcept;
  // kSwizzle: turns every swizzled child reference of `page` (latched exclusively) back into its
  // page id. Call before moving, copying or removing child references. No-op for kHash.
  void unswizzle_children(PageGuard& page);
  // Page `id` is the root: never evicted once resident (replaces the previous root). kSwizzle:
  // the page from which swizzling starts.
  void set_root(PageId id);

  // Writes every dirty frame back (WAL rule honoured) and fsyncs the file: the page half of a
  // checkpoint. Returns the pages written. Fixes may run meanwhile; a page changed after its
  // write-back stays dirty. The calling thread must hold no PageGuard (it latches each dirty
  // page exclusively for a moment).
  std::size_t write_back_all();

  [[nodiscard]] BufferStats stats() const noexcept;
  [[nodiscard]] std::size_t frame_count() const noexcept;
  [[nodiscard]] std::size_t page_size() const noexcept;
  [[nodiscard]] PageTableKind page_table() const noexcept;
  [[nodiscard]] EvictionKind eviction() const noexcept;
  [[nodiscard]] PageFile& file() noexcept;
  // The replacement policy's own state, for `stats engine`.
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> policy_state() const;

 private:
  friend class PageGuard;
  void unfix(FrameId frame, LatchMode mode) noexcept;
  void mark_dirty(FrameId frame) noexcept;

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pmcached::buffer

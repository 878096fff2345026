// PageChanges: the bytes one command changed in one page, for the redo log.
//
// Every change an engine makes to a page goes through this class (write, fill, move), which
// applies it to the page and remembers what changed: byte ranges, and moves. At the end of the
// command they become the page's redo record, unless the page must be logged whole
// (mini_transaction.h): replay applies the moves in their order, then copies the ranges' final
// bytes back. A move is remembered as {to, from, length} — a slot array shifted by one slot is
// 12 bytes in the log, not the half page it changed — unless its source overlaps a range
// written before it in the command: replay would then read bytes that are not there yet, so its
// destination becomes a range instead. Ranges closer than kMergeGap bytes are merged, so a record
// stays short. The buffer manager's PageHeader (the first kPageHeaderSize bytes) is never a
// change: the log stamps it.
//
// Thread safety: none; the page is latched exclusively by the caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/buffer/buffer_types.h"

namespace pmcached::buffer {

struct ByteRange {
  std::uint32_t offset = 0;
  std::uint32_t length = 0;
};

struct ByteMove {
  std::uint32_t to = 0;
  std::uint32_t from = 0;
  std::uint32_t length = 0;
};

class PageChanges {
 public:
  static constexpr std::uint32_t kMergeGap = 16;

  PageChanges(PageId id, std::byte* page, std::size_t page_size) noexcept
      : id_(id), page_(page), page_size_(page_size) {}

  [[nodiscard]] PageId id() const noexcept { return id_; }
  [[nodiscard]] std::byte* page() const noexcept { return page_; }
  [[nodiscard]] std::size_t page_size() const noexcept { return page_size_; }

  void write(std::size_t offset, const void* bytes, std::size_t n) noexcept {
    std::memcpy(page_ + offset, bytes, n);
    mark(offset, n);
  }
  template <typename T>
  void store(std::size_t offset, const T& value) noexcept {
    write(offset, &value, sizeof value);
  }
  void fill(std::size_t offset, std::byte value, std::size_t n) noexcept {
    std::memset(page_ + offset, static_cast<int>(value), n);
    mark(offset, n);
  }
  // memmove semantics.
  void move(std::size_t to, std::size_t from, std::size_t n) noexcept;
  // The caller changed [offset, offset + n) in place (e.g. a whole page rebuilt in a buffer).
  void mark(std::size_t offset, std::size_t n) noexcept;
  // The whole page changed (a new page, a split, a rebuild): it is logged whole.
  void mark_whole() noexcept { whole_ = true; }

  [[nodiscard]] bool whole() const noexcept { return whole_; }
  [[nodiscard]] bool empty() const noexcept { return !whole_ && ranges_.empty() && moves_.empty(); }
  // Sorted, disjoint, merged ranges (empty if whole()).
  [[nodiscard]] const std::vector<ByteRange>& ranges() const noexcept { return ranges_; }
  // The moves to replay before the ranges, in their order (ignored if whole()).
  [[nodiscard]] const std::vector<ByteMove>& moves() const noexcept { return moves_; }
  // Bytes the ranges cover.
  [[nodiscard]] std::size_t changed_bytes() const noexcept;

 private:
  PageId id_;
  std::byte* page_;
  std::size_t page_size_;
  bool whole_ = false;
  std::vector<ByteRange> ranges_;
  std::vector<ByteMove> moves_;
};

}  // namespace pmcached::buffer

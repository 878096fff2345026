// PageChanges: the bytes one command changed in one page, for the redo log.
//
// Every change an engine makes to a page goes through this class (write, fill, move), which
// applies it to the page and remembers the changed byte ranges. At the end of the command the
// ranges' new contents become the page's redo record (physical redo: replay copies the bytes
// back), unless the page must be logged whole (mini_transaction.h). Ranges closer than kMergeGap
// bytes are merged, so a record stays short. The buffer manager's PageHeader (the first
// kPageHeaderSize bytes) is never a change: the log stamps it.
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
  // memmove semantics; the destination range is what changed.
  void move(std::size_t to, std::size_t from, std::size_t n) noexcept {
    std::memmove(page_ + to, page_ + from, n);
    mark(to, n);
  }
  // The caller changed [offset, offset + n) in place (e.g. a whole page rebuilt in a buffer).
  void mark(std::size_t offset, std::size_t n) noexcept;
  // The whole page changed (a new page, a split, a rebuild): it is logged whole.
  void mark_whole() noexcept { whole_ = true; }

  [[nodiscard]] bool whole() const noexcept { return whole_; }
  [[nodiscard]] bool empty() const noexcept { return !whole_ && ranges_.empty(); }
  // Sorted, disjoint, merged ranges (empty if whole()).
  [[nodiscard]] const std::vector<ByteRange>& ranges() const noexcept { return ranges_; }
  // Bytes the ranges cover.
  [[nodiscard]] std::size_t changed_bytes() const noexcept;

 private:
  PageId id_;
  std::byte* page_;
  std::size_t page_size_;
  bool whole_ = false;
  std::vector<ByteRange> ranges_;
};

}  // namespace pmcached::buffer

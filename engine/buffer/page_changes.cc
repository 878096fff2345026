#include "engine/buffer/page_changes.h"

#include <algorithm>

namespace pmcached::buffer {

void PageChanges::mark(std::size_t offset, std::size_t n) noexcept {
  if (whole_ || n == 0) return;
  // Never log the buffer manager's header: clip it off.
  if (offset < kPageHeaderSize) {
    if (offset + n <= kPageHeaderSize) return;
    n -= kPageHeaderSize - offset;
    offset = kPageHeaderSize;
  }
  auto begin = static_cast<std::uint32_t>(offset);
  auto end = static_cast<std::uint32_t>(offset + n);
  // Ranges are few (a command changes a header, a slot run and a record): a linear merge.
  auto it = std::lower_bound(
      ranges_.begin(), ranges_.end(), begin,
      [](const ByteRange& r, std::uint32_t at) { return r.offset + r.length + kMergeGap < at; });
  while (it != ranges_.end() && it->offset <= end + kMergeGap) {
    begin = std::min(begin, it->offset);
    end = std::max(end, it->offset + it->length);
    it = ranges_.erase(it);
  }
  ranges_.insert(it, ByteRange{begin, end - begin});
}

void PageChanges::move(std::size_t to, std::size_t from, std::size_t n) noexcept {
  std::memmove(page_ + to, page_ + from, n);
  if (whole_ || n == 0) return;
  const auto overlaps_a_range = [this](std::size_t begin, std::size_t end) {
    return std::any_of(ranges_.begin(), ranges_.end(), [&](const ByteRange& r) {
      return r.offset < end && begin < std::size_t{r.offset} + r.length;
    });
  };
  if (from < kPageHeaderSize || to < kPageHeaderSize || overlaps_a_range(from, from + n)) {
    mark(to, n);
    return;
  }
  moves_.push_back(ByteMove{static_cast<std::uint32_t>(to), static_cast<std::uint32_t>(from),
                            static_cast<std::uint32_t>(n)});
}

std::size_t PageChanges::changed_bytes() const noexcept {
  if (whole_) return page_size_ - kPageHeaderSize;
  std::size_t total = 0;
  for (const ByteRange& r : ranges_) total += r.length;
  return total;
}

}  // namespace pmcached::buffer

// Overflow records: a leaf record too large to keep inline (above max_inline_payload()) lives in
// a chain of overflow pages; the leaf keeps a small reference to it.
//
// Layout version 1:
//   reference (the leaf payload, slot flag kOverflowRecord):
//     u64 first page, u64 last page, u64 record size, then the record's first kOverflowPrefix
//     bytes (the store's item header and more, so a scan reads a record's header from the leaf)
//   overflow page: the node header (kind kOverflow, link = next page of the chain, 0 at the
//     end; the data_start field holds the bytes used), then record bytes [kSlotsOffset, page end).
//     The chain holds the record from byte kOverflowPrefix on.
// The last page is in the reference so that freeing a chain splices it onto the free list whole
// (one page changed, not every page of the chain).
//
// Thread safety: pure functions; pages are latched by the caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/bptree/node.h"

namespace pmcached::engine::bptree {

inline constexpr std::size_t kOverflowPrefix = 64;

struct OverflowRef {
  PageId first = 0;
  PageId last = 0;
  std::uint64_t size = 0;  // the whole record
};
inline constexpr std::size_t kOverflowRefSize = 24 + kOverflowPrefix;

// The largest record a leaf keeps inline: an entry with a 250-byte key stays within half a
// page, so a split always finds two halves that fit (separator.h).
[[nodiscard]] constexpr std::size_t max_inline_payload(std::size_t page_size) noexcept {
  return node_capacity(page_size) / 2 - kSlotSize - kMaxKeySize;
}

// Record bytes one overflow page holds.
[[nodiscard]] constexpr std::size_t overflow_capacity(std::size_t page_size) noexcept {
  return page_size - kSlotsOffset;
}
// Pages the chain of a record of `size` bytes needs.
[[nodiscard]] constexpr std::size_t overflow_pages(std::size_t size,
                                                   std::size_t page_size) noexcept {
  const std::size_t rest = size > kOverflowPrefix ? size - kOverflowPrefix : 0;
  const std::size_t capacity = overflow_capacity(page_size);
  return (rest + capacity - 1) / capacity;
}

// Writes the reference for `record` (its first kOverflowPrefix bytes are copied) into `out`
// (kOverflowRefSize bytes).
void encode_overflow_ref(const OverflowRef& ref, std::span<const std::byte> record,
                         std::byte* out) noexcept;
[[nodiscard]] OverflowRef decode_overflow_ref(std::span<const std::byte> payload) noexcept;
// The record's first bytes kept in the reference.
[[nodiscard]] inline std::span<const std::byte> overflow_prefix(
    std::span<const std::byte> payload) noexcept {
  return payload.subspan(24, kOverflowPrefix);
}
// Offset of the prefix in the reference (to patch it).
inline constexpr std::size_t kOverflowPrefixOffset = 24;

// Makes the page an overflow page holding `bytes` (at most overflow_capacity()), linked to `next`.
void write_overflow_page(PageChanges& page, PageId next, std::span<const std::byte> bytes) noexcept;
// The bytes an overflow page holds.
[[nodiscard]] std::span<const std::byte> overflow_bytes(const std::byte* page) noexcept;

}  // namespace pmcached::engine::bptree

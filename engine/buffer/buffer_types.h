// Names shared by the paged half: page and frame numbers, the page header every page starts
// with, and the choices a buffer manager is built with (--page-table, --eviction).
//
// Every page on the page file and in a frame starts with a PageHeader that the buffer manager
// owns: the LSN of the last redo-log record applied to the page (the WAL rule and replay read
// it) and a checksum written on every write-back and checked on every read (a torn or foreign
// page is refused, never used). Engines lay out the rest of the page (kPageHeaderSize onwards).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace pmcached::buffer {

// Page number in the page file. Page 0 is the file's own header page (page_file.h); no engine
// page has id 0, so 0 means "no page".
using PageId = std::uint64_t;
inline constexpr PageId kNoPage = 0;

// Index of a frame in the buffer pool.
using FrameId = std::uint32_t;
inline constexpr FrameId kNoFrame = UINT32_MAX;

// Log sequence number: the byte position in the redo log just past a record (redo_log.h).
using Lsn = std::uint64_t;

struct PageHeader {
  Lsn lsn = 0;                 // last log record applied to this page
  std::uint32_t checksum = 0;  // page_checksum.h: of the page with this field taken as 0
  std::uint32_t kind = 0;      // the engine's page kind (0 = free page)
};
static_assert(sizeof(PageHeader) == 16);
inline constexpr std::size_t kPageHeaderSize = sizeof(PageHeader);

inline constexpr std::size_t kMinPageSize = 4096;
inline constexpr std::size_t kMaxPageSize = 64 * 1024;
inline constexpr std::size_t kDefaultPageSize = 16 * 1024;

// The pool bytes of a paged engine's double-write buffer (double_write.h): its page slots.
inline constexpr std::size_t kDoubleWriteBytes = std::size_t{2} << 20;

enum class PageTableKind : std::uint8_t {
  kHash,     // page id -> frame through an extendible hash table (seed 003)
  kSwizzle,  // child references in resident parents point at frames directly (seed 001)
};

enum class EvictionKind : std::uint8_t { kRandom, kClock, kGClock, kCar, kLru };

[[nodiscard]] std::string_view page_table_name(PageTableKind kind) noexcept;
[[nodiscard]] std::optional<PageTableKind> parse_page_table(std::string_view name) noexcept;
[[nodiscard]] std::string_view eviction_name(EvictionKind kind) noexcept;
[[nodiscard]] std::optional<EvictionKind> parse_eviction(std::string_view name) noexcept;

}  // namespace pmcached::buffer

// The redo log's bytes in the pool (layout version 3): its root block and its units. Pure
// functions over memory: nothing here flushes, fences or locks (redo_log.cc does).
//
// Root block: one 64-byte cache line (RootBlock). The immutable part [0, 48) is covered by an
// XXH64 checksum; the checkpoint LSN is the only field that changes, with one failure-atomic
// 8-byte store. `seed` is drawn at creation and seeds every unit checksum, so units left in the
// region's bytes by an earlier log (a freed and reused block) never verify as this log's.
//
// Unit: a 16-byte UnitHeader {u64 lsn of its first byte, u32 length, u32 checksum}, then records
// {u16 type, u16 reserved (0), u32 body length, body padded with zeros to 8 bytes}; a unit whose
// records end 8 bytes short of a multiple of 16 (kUnitAlign) ends with a filler record header
// {0, kFiller, 0}, so `length` is a multiple of 16 and no tail is ever read as an empty record.
// Because every unit is a multiple of 16, so is the room left before the region's end, and a
// 16-byte marker always fits there. The low bits of `length` (free, as it is a multiple of 16)
// mark the two marker units, which carry no records and whose checksum covers their header only:
//   padding (kPaddingFlag): fills the rest of the region, so that no unit wraps (its body is
//       never written);
//   lap skip (kLapSkipFlag): 16 bytes; the next unit's LSN is one region size further than its
//       end, so every byte left in the region from before has an LSN below the next expected
//       one. replay() writes one where the log ends (redo_log.cc says why).
// The checksum of a unit is the low 32 bits of XXH3-64, seeded with `seed`, over the whole unit
// with the checksum field taken as 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/buffer/redo_log.h"

namespace pmcached::buffer::redo {

inline constexpr std::uint32_t kLayoutVersion = 3;
inline constexpr char kRootMagic[8] = {'P', 'M', 'R', 'E', 'D', 'O', 'L', 'G'};
inline constexpr std::size_t kRegionAlign = 4096;  // region sizes are multiples of this

struct RootBlock {
  char magic[8];
  std::uint32_t version;
  std::uint32_t seed;  // seeds this log's unit checksums
  std::uint64_t region_offset;
  std::uint64_t region_size;
  std::uint64_t page_file_id;
  std::uint64_t double_write_root;  // the page file's DoubleWriteBuffer (0: none)
  std::uint64_t checksum;           // XXH64 of the bytes before it
  std::uint64_t checkpoint_lsn;     // where replay starts; one failure-atomic store
};
static_assert(sizeof(RootBlock) == 64);
static_assert(offsetof(RootBlock, checksum) == 48 && offsetof(RootBlock, checkpoint_lsn) == 56);

[[nodiscard]] std::uint64_t root_checksum(const RootBlock& root) noexcept;

struct UnitHeader {
  std::uint64_t lsn;
  std::uint32_t length;  // bytes, a multiple of kUnitAlign, | marker flags
  std::uint32_t checksum;
};
static_assert(sizeof(UnitHeader) == 16);

inline constexpr std::size_t kUnitAlign = 16;
inline constexpr std::size_t kUnitHeaderSize = sizeof(UnitHeader);
inline constexpr std::size_t kRecordHeaderSize = 8;
inline constexpr std::uint16_t kFiller = 1;       // the reserved field of the filler record header
inline constexpr std::uint32_t kPaddingFlag = 1;  // flags in UnitHeader::length's low bits
inline constexpr std::uint32_t kLapSkipFlag = 2;
inline constexpr std::uint32_t kFlagMask = kUnitAlign - 1;

// The encoded size of a unit holding `records` (a multiple of kUnitAlign).
[[nodiscard]] std::uint64_t unit_size(std::span<const LogRecord> records) noexcept;

// Writes the unit of `records` with first-byte LSN `lsn` at `out` (unit_size() bytes).
void encode_unit(std::byte* out, Lsn lsn, std::span<const LogRecord> records,
                 std::uint32_t seed) noexcept;
// Writes a marker unit header (kPaddingFlag or kLapSkipFlag) of `length` bytes at `out`.
void encode_marker(std::byte* out, Lsn lsn, std::uint64_t length, std::uint32_t flag,
                   std::uint32_t seed) noexcept;

enum class UnitKind : std::uint8_t { kRecords, kPadding, kLapSkip };

struct ParsedUnit {
  UnitKind kind = UnitKind::kRecords;
  std::uint64_t length = 0;  // bytes the unit occupies in the region
};

// Reads the unit at `in` if it is a valid unit of this log with first-byte LSN `expected` that
// fits in `room` bytes; its records (views into `in`) go to `records`. nullopt otherwise: never
// written, torn, from an earlier lap or log, or malformed.
[[nodiscard]] std::optional<ParsedUnit> parse_unit(const std::byte* in, std::uint64_t room,
                                                   Lsn expected, std::uint32_t seed,
                                                   std::vector<LogRecord>& records);

}  // namespace pmcached::buffer::redo

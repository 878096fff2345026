// Encoding and validating the redo log's root block and units (layout in redo_log_format.h).
#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include "engine/buffer/redo_log_format.h"

#include <cstring>

#include <xxhash.h>

namespace pmcached::buffer::redo {
namespace {

constexpr std::uint64_t round_up(std::uint64_t n, std::uint64_t to) noexcept {
  return (n + to - 1) / to * to;
}

struct RecordHeader {
  std::uint16_t type;
  std::uint16_t reserved;
  std::uint32_t length;
};
static_assert(sizeof(RecordHeader) == kRecordHeaderSize);

// Every unit checksum: the low 32 bits of XXH3-64 (XXH32 before layout version 3, at less than
// half the speed), seeded with the log's seed.
std::uint32_t checksum32(const void* bytes, std::size_t n, std::uint32_t seed) noexcept {
  return static_cast<std::uint32_t>(XXH3_64bits_withSeed(bytes, n, seed));
}

std::uint32_t unit_checksum(const std::byte* unit, std::uint64_t length,
                            std::uint32_t seed) noexcept {
  UnitHeader header;
  std::memcpy(&header, unit, sizeof(header));
  header.checksum = 0;
  XXH3_state_t state;
  XXH3_INITSTATE(&state);  // else a reset with a seed may keep a secret left on the stack
  XXH3_64bits_reset_withSeed(&state, seed);
  XXH3_64bits_update(&state, &header, sizeof(header));
  XXH3_64bits_update(&state, unit + sizeof(header), length - sizeof(header));
  return static_cast<std::uint32_t>(XXH3_64bits_digest(&state));
}

// The records of a checksummed unit body; false if they do not tile it exactly.
bool parse_records(const std::byte* body, std::uint64_t length, std::vector<LogRecord>& out) {
  out.clear();
  std::uint64_t at = 0;
  while (at < length) {
    if (length - at < kRecordHeaderSize) return false;
    RecordHeader h;
    std::memcpy(&h, body + at, sizeof(h));
    if (h.reserved == kFiller) return at + kRecordHeaderSize == length && h.length == 0;
    if (h.reserved != 0) return false;
    const std::uint64_t end = at + kRecordHeaderSize + round_up(h.length, 8);
    if (end > length) return false;
    out.push_back({h.type, std::span(body + at + kRecordHeaderSize, h.length)});
    at = end;
  }
  return true;
}

}  // namespace

std::uint64_t root_checksum(const RootBlock& root) noexcept {
  return XXH64(&root, offsetof(RootBlock, checksum), 0);
}

std::uint64_t unit_size(std::span<const LogRecord> records) noexcept {
  std::uint64_t size = kUnitHeaderSize;
  for (const LogRecord& r : records) size += kRecordHeaderSize + round_up(r.body.size(), 8);
  return round_up(size, kUnitAlign);
}

void encode_unit(std::byte* out, Lsn lsn, std::span<const LogRecord> records,
                 std::uint32_t seed) noexcept {
  const std::uint64_t size = unit_size(records);
  std::uint64_t at = kUnitHeaderSize;
  for (const LogRecord& r : records) {
    const RecordHeader h{r.type, 0, static_cast<std::uint32_t>(r.body.size())};
    std::memcpy(out + at, &h, sizeof(h));
    if (!r.body.empty()) std::memcpy(out + at + sizeof(h), r.body.data(), r.body.size());
    const std::uint64_t padded = round_up(r.body.size(), 8);
    std::memset(out + at + sizeof(h) + r.body.size(), 0, padded - r.body.size());
    at += sizeof(h) + padded;
  }
  if (at < size) {
    const RecordHeader filler{0, kFiller, 0};
    std::memcpy(out + at, &filler, sizeof(filler));
  }
  UnitHeader header{lsn, static_cast<std::uint32_t>(size), 0};
  std::memcpy(out, &header, sizeof(header));
  header.checksum = checksum32(out, size, seed);
  std::memcpy(out, &header, sizeof(header));
}

void encode_marker(std::byte* out, Lsn lsn, std::uint64_t length, std::uint32_t flag,
                   std::uint32_t seed) noexcept {
  UnitHeader header{lsn, static_cast<std::uint32_t>(length) | flag, 0};
  header.checksum = checksum32(&header, sizeof(header), seed);
  std::memcpy(out, &header, sizeof(header));
}

std::optional<ParsedUnit> parse_unit(const std::byte* in, std::uint64_t room, Lsn expected,
                                     std::uint32_t seed, std::vector<LogRecord>& records) {
  records.clear();
  if (room < kUnitHeaderSize) return std::nullopt;
  UnitHeader header;
  std::memcpy(&header, in, sizeof(header));
  if (header.lsn != expected) return std::nullopt;
  const std::uint32_t flags = header.length & kFlagMask;
  const std::uint64_t length = header.length & ~kFlagMask;
  if (length < kUnitHeaderSize || length > room) return std::nullopt;
  if (flags != 0) {
    // A marker's checksum covers its header only.
    const bool padding = flags == kPaddingFlag;
    if (padding ? length != room : flags != kLapSkipFlag || length != kUnitHeaderSize) {
      return std::nullopt;
    }
    if (unit_checksum(in, kUnitHeaderSize, seed) != header.checksum) return std::nullopt;
    return ParsedUnit{padding ? UnitKind::kPadding : UnitKind::kLapSkip, length};
  }
  if (unit_checksum(in, length, seed) != header.checksum) return std::nullopt;
  if (!parse_records(in + kUnitHeaderSize, length - kUnitHeaderSize, records)) {
    records.clear();
    return std::nullopt;
  }
  return ParsedUnit{UnitKind::kRecords, length};
}

}  // namespace pmcached::buffer::redo

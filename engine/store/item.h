// Item records: the store's layout of one cached item, in ONE allocation.
//
// Layout version 1 (the same in DRAM and in a persistent pool):
//   offset  0  u32 value_size
//   offset  4  u8  key_size (1..250)
//   offset  5  u8  bits: kFetched, kStale, kTokenSent, kReferenced, kKeyBinary
//   offset  6  u16 reserved (0)
//   offset  8  u32 client_flags
//   offset 12  u32 checksum     XXH32 of the immutable part (see item_checksum)
//   offset 16  i64 exptime      absolute Unix seconds, 0 = never
//   offset 24  u64 cas
//   offset 32  i64 last_update  Unix seconds of the store that built the record
//   offset 40  i64 last_access  Unix seconds of the last bumping access
//   offset 48  key bytes, then value bytes (no terminator)
// The ItemRef handed to index engines is given by the ItemHeap (item_heap.h). Layout history:
// docs/LAYOUTS.md.
//
// Thread safety: a record is immutable once published, except its access metadata (bits,
// last_access, and exptime on touch), which is changed only while holding the stripe lock of its
// key. Every reader holds that lock too, so plain fields suffice.
// Durability (persistent heaps): a record is sealed and durable before the reference that
// publishes it can be (written back with the index's first fence, pm_region.h); a
// touch persists the 8-byte exptime in place; bits and last_access are hints, never flushed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>

#include "engine/index_engine.h"

namespace pmcached::engine {

struct ItemHeader {
  static constexpr std::uint8_t kFetched = 1u << 0;     // fetched since it was stored
  static constexpr std::uint8_t kStale = 1u << 1;       // invalidated (meta I)
  static constexpr std::uint8_t kTokenSent = 1u << 2;   // a client was given the win (W)
  static constexpr std::uint8_t kReferenced = 1u << 3;  // CLOCK second-chance bit
  // Stored by ms with b: meta replies echo its key in base64 (memcached ITEM_KEY_BINARY).
  // Set when the record is built, so it is persisted with it.
  static constexpr std::uint8_t kKeyBinary = 1u << 4;

  std::uint32_t value_size = 0;
  std::uint8_t key_size = 0;
  std::uint8_t bits = 0;
  std::uint16_t reserved0 = 0;
  std::uint32_t client_flags = 0;
  std::uint32_t checksum = 0;
  std::int64_t exptime = 0;
  std::uint64_t cas = 0;
  std::int64_t last_update = 0;
  std::int64_t last_access = 0;

  [[nodiscard]] bool has(std::uint8_t bit) const noexcept { return (bits & bit) != 0; }
  [[nodiscard]] char* key_data() noexcept { return reinterpret_cast<char*>(this + 1); }
  [[nodiscard]] const char* key_data() const noexcept {
    return reinterpret_cast<const char*>(this + 1);
  }
  [[nodiscard]] char* value_data() noexcept { return key_data() + key_size; }
  [[nodiscard]] std::string_view key() const noexcept { return {key_data(), key_size}; }
  [[nodiscard]] std::string_view value() const noexcept {
    return {key_data() + key_size, value_size};
  }
  // Bytes of the whole record.
  [[nodiscard]] std::size_t record_size() const noexcept {
    return sizeof(ItemHeader) + key_size + value_size;
  }
  // The size that chooses the record's size class (memcached_item_size below).
  [[nodiscard]] std::size_t class_size() const noexcept;
};
static_assert(sizeof(ItemHeader) == 48, "item layout version 1 has a 48-byte header");

[[nodiscard]] constexpr std::size_t item_record_size(std::size_t key_size,
                                                     std::size_t value_size) noexcept {
  return sizeof(ItemHeader) + key_size + value_size;
}

// memcached's ITEM_ntotal, which item_size_ok() checks and which chooses an item's slab class
// (its `mem_requested`): its 48-byte item header, 8 bytes of cas, the key and its NUL,
// 4 bytes of client flags when they are non-zero, and the value with its "\r\n".
[[nodiscard]] constexpr std::size_t memcached_item_size(std::size_t key_size,
                                                        std::size_t value_size,
                                                        std::uint32_t client_flags) noexcept {
  return 48 + 8 + key_size + 1 + (client_flags != 0 ? 4 : 0) + value_size + 2;
}

inline std::size_t ItemHeader::class_size() const noexcept {
  return memcached_item_size(key_size, value_size, client_flags);
}

// memcached keeps an item larger than slab_chunk_max (half its 1 MB slab page) in chunks.
inline constexpr std::size_t kMemcachedChunkMax = 512 * 1024;

// The record's checksum over its immutable part (sizes, client flags, key, value); the
// mutable access metadata (bits, exptime, cas, times) is not covered. Stored in `checksum`.
[[nodiscard]] std::uint32_t item_checksum(const ItemHeader& item) noexcept;
inline void seal_item(ItemHeader& item) noexcept { item.checksum = item_checksum(item); }
[[nodiscard]] inline bool item_intact(const ItemHeader& item) noexcept {
  return item.checksum == item_checksum(item);
}

}  // namespace pmcached::engine

// Slab classes: memcached 1.6's size classes for items (slabs.c, slabs_init), so that an item
// lands in the class number memcached would give it and `stats slabs` / `stats items` read the
// same.
//
// The table: size = 48 (memcached's item header) + min_size (-n); for each class, while size <
// chunk_max / growth_factor: round size up to a multiple of 8, that is the class's chunk size,
// then size *= growth_factor (truncated to an integer, as memcached's unsigned arithmetic does);
// at most 62 such classes. One last class is exactly chunk_max (-o slab_chunk_max). Classes are
// numbered from 1 by memcached; index 0 here is class 1. A class's page (memcached's slab page,
// the allocator's chunk) holds page_size / chunk size blocks.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pmcached::pm {

struct SlabSettings {
  std::uint32_t page_size = 1u << 20;    // memcached's slab_page_size (fixed at 1 MiB there too)
  std::uint32_t min_size = 48;           // -n: bytes for key + value above the 48-byte header
  double growth_factor = 1.25;           // -f
  std::uint32_t chunk_max = 512u << 10;  // -o slab_chunk_max: the largest class

  friend bool operator==(const SlabSettings&, const SlabSettings&) = default;
};

// The chunk sizes of the classes, class 1 first, ascending.
[[nodiscard]] std::vector<std::uint32_t> slab_class_sizes(const SlabSettings& settings);

// Why `settings` cannot make a class table (memcached's words where it has them), or nullopt.
[[nodiscard]] std::optional<std::string> slab_settings_error(const SlabSettings& settings);

// memcached's limit on the number of classes (MAX_NUMBER_OF_SLAB_CLASSES - 1, class 0 unused).
inline constexpr std::size_t kMaxSlabClasses = 63;

}  // namespace pmcached::pm

#include "engine/pm/slab_classes.h"

namespace pmcached::pm {
namespace {

constexpr std::uint32_t kItemHeader = 48;  // sizeof(item) in memcached 1.6 on 64-bit
constexpr std::uint32_t kAlign = 8;        // CHUNK_ALIGN_BYTES

}  // namespace

std::vector<std::uint32_t> slab_class_sizes(const SlabSettings& settings) {
  std::vector<std::uint32_t> sizes;
  std::uint32_t size = kItemHeader + settings.min_size;
  const double limit = settings.chunk_max / settings.growth_factor;
  while (sizes.size() + 1 < kMaxSlabClasses && size < limit) {
    if (size % kAlign != 0) size += kAlign - size % kAlign;
    sizes.push_back(size);
    size = static_cast<std::uint32_t>(size * settings.growth_factor);
  }
  sizes.push_back(settings.chunk_max);
  return sizes;
}

std::optional<std::string> slab_settings_error(const SlabSettings& settings) {
  if (!(settings.growth_factor > 1.0)) return "Factor must be greater than 1";
  if (settings.min_size == 0) return "Chunk size must be greater than 0";
  if (settings.chunk_max > settings.page_size) {
    return "slab_chunk_max (bytes: " + std::to_string(settings.chunk_max) +
           ") cannot be larger than the slab page (" + std::to_string(settings.page_size) + ")";
  }
  if (settings.chunk_max == 0 || settings.page_size % settings.chunk_max != 0) {
    return "the slab page (" + std::to_string(settings.page_size) +
           ") must be evenly divisible by slab_chunk_max (bytes: " +
           std::to_string(settings.chunk_max) + ")";
  }
  if (kItemHeader + settings.min_size > settings.chunk_max) {
    return "-n " + std::to_string(settings.min_size) + " makes the smallest class larger than " +
           "slab_chunk_max (" + std::to_string(settings.chunk_max) + ")";
  }
  return std::nullopt;
}

}  // namespace pmcached::pm

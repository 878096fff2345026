#include "engine/buffer/page_checksum.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include "engine/buffer/buffer_types.h"

namespace pmcached::buffer {

std::uint32_t page_checksum(const std::byte* page, std::size_t size) noexcept {
  constexpr std::size_t at = offsetof(PageHeader, checksum);
  constexpr std::size_t after = at + sizeof(PageHeader::checksum);
  const std::uint32_t zero = 0;
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, page, at);
  XXH3_64bits_update(&state, &zero, sizeof(zero));
  XXH3_64bits_update(&state, page + after, size - after);
  return static_cast<std::uint32_t>(XXH3_64bits_digest(&state));
}

bool all_zero(const std::byte* bytes, std::size_t size) noexcept {
  static constexpr std::byte kZeros[256] = {};
  for (std::size_t at = 0; at < size; at += sizeof(kZeros)) {
    if (std::memcmp(bytes + at, kZeros, std::min(sizeof(kZeros), size - at)) != 0) return false;
  }
  return true;
}

}  // namespace pmcached::buffer

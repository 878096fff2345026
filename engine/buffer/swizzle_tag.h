// Swizzled child references (seed 001 ch. 1, --page-table swizzle): an 8-byte child reference
// in a resident inner page holds either a page id or, once swizzled, bit 63 | the frame id of
// the resident child. Page ids stay below 2^63, so the bit tells the two apart; a page image on
// the page file never holds a tagged reference.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>

#include "engine/buffer/buffer_types.h"

namespace pmcached::buffer {

inline constexpr std::uint64_t kSwizzledBit = 1ull << 63;

[[nodiscard]] constexpr bool is_swizzled(std::uint64_t ref) noexcept {
  return (ref & kSwizzledBit) != 0;
}
[[nodiscard]] constexpr std::uint64_t swizzled_ref(FrameId frame) noexcept {
  return kSwizzledBit | frame;
}
[[nodiscard]] constexpr FrameId frame_of(std::uint64_t ref) noexcept {
  return static_cast<FrameId>(ref & ~kSwizzledBit);
}

}  // namespace pmcached::buffer

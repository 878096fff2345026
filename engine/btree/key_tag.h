// Key tags: a 15-bit hash of the key kept in the spare high bits of an 8-byte leaf entry, so that
// an exact-match search over an unsorted (or slot-ordered) leaf reads the out-of-line key of an
// entry only when its tag matches: about one item read per hit and almost none per miss, instead
// of one per entry compared. This is FPTree's fingerprint idea (seed 002 §2.2) applied to the
// wB+-Tree and NV-Tree leaves, whose entries are item references (keys live in the items).
//
// Entry bits: [0, 48) the item reference (a pool offset; pools are at most 2^48 bytes, which
// BTreeEngine checks at open), [48, 63) the tag, bit 63 left to the engine (NV-Tree marks its
// negative entries with it). The tag rides in the same word as the reference, so it costs no
// extra store, flush or fence, and is always consistent with the reference it describes.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "engine/index_engine.h"

namespace pmcached::engine::btree {

inline constexpr unsigned kRefBits = 48;
inline constexpr std::uint64_t kMaxTaggedPoolBytes = std::uint64_t{1} << kRefBits;
inline constexpr std::uint64_t kRefMask = kMaxTaggedPoolBytes - 1;
inline constexpr std::uint64_t kTagMask = std::uint64_t{0x7fff} << kRefBits;

// The tag bits of `key` (already shifted into place; may be zero).
[[nodiscard]] std::uint64_t key_tag(std::string_view key) noexcept;

[[nodiscard]] constexpr std::uint64_t tagged(ItemRef ref, std::uint64_t tag) noexcept {
  return ref | tag;
}
[[nodiscard]] constexpr ItemRef ref_of(std::uint64_t entry) noexcept { return entry & kRefMask; }
[[nodiscard]] constexpr std::uint64_t tag_of(std::uint64_t entry) noexcept {
  return entry & kTagMask;
}

}  // namespace pmcached::engine::btree

// Keys read as radix chunks, and the 8-byte path-compression header, shared by the radix engines
// (wort: 4-bit chunks; woart, artcow: 8-bit chunks).
//
// A key is a byte string read as chunks of kBits, most significant bits of each byte first, so
// the tree order is the byte order. Chunk positions are absolute (counted from the key's start).
//
// Thread safety: pure functions and plain values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace pmcached::engine::radix {

template <unsigned kBits>
struct Chunks {
  static_assert(kBits == 4 || kBits == 8, "a chunk is a nibble or a byte");
  static constexpr unsigned kFanout = 1u << kBits;
  static constexpr unsigned kPerByte = 8 / kBits;

  // Chunk `i` of `key` (i < count(key)).
  [[nodiscard]] static unsigned at(std::string_view key, std::size_t i) noexcept {
    const auto byte = static_cast<unsigned char>(key[i / kPerByte]);
    if constexpr (kBits == 8) {
      return byte;
    } else {
      return (i % 2 == 0) ? (byte >> 4) : (byte & 0xFu);
    }
  }
  [[nodiscard]] static std::size_t count(std::string_view key) noexcept {
    return key.size() * kPerByte;
  }
  // Length of the common chunk run of `a` and `b` starting at chunk `from`.
  [[nodiscard]] static std::uint32_t common(std::string_view a, std::string_view b,
                                            std::size_t from) noexcept {
    const std::size_t end = count(a) < count(b) ? count(a) : count(b);
    std::size_t i = from;
    if constexpr (kBits == 8) {
      while (i < end && a[i] == b[i]) ++i;
    } else {
      while (i < end && at(a, i) == at(b, i)) ++i;
    }
    return static_cast<std::uint32_t>(i - from);
  }
};

// The 8-byte node header, written with one failure-atomic store (seed 002 §3.4):
//   bits  0..15  depth       chunk position where the compressed prefix starts
//   bits 16..31  prefix_len  number of chunks collapsed into this node
//   bits 32..63  prefix      the first min(prefix_len, kStored) prefix chunks, chunk j in
//                            bits 32 + kBits*j ..
// "branch" = depth + prefix_len is the position of the chunk that selects a child. Prefix chunks
// beyond the stored ones are optimistic (hybrid path compression, seed 002 §3.3): readers skip
// them and compare the full key at the leaf.
template <unsigned kBits>
struct PathHeader {
  static constexpr unsigned kStored = 32 / kBits;
  using Key = Chunks<kBits>;

  std::uint32_t depth = 0;
  std::uint32_t prefix_len = 0;
  std::uint32_t prefix = 0;  // packed stored chunks

  [[nodiscard]] std::uint32_t branch() const noexcept { return depth + prefix_len; }
  [[nodiscard]] unsigned stored() const noexcept {
    return prefix_len < kStored ? prefix_len : kStored;
  }
  [[nodiscard]] unsigned chunk(unsigned j) const noexcept {
    return (prefix >> (kBits * j)) & (Key::kFanout - 1);
  }
  void set_chunk(unsigned j, unsigned value) noexcept {
    constexpr std::uint32_t kMask = Key::kFanout - 1;
    prefix = (prefix & ~(kMask << (kBits * j))) | ((value & kMask) << (kBits * j));
  }
  // The stored prefix chunks agree with `key` (which must reach branch()).
  [[nodiscard]] bool stored_prefix_matches(std::string_view key) const noexcept {
    for (unsigned j = 0; j < stored(); ++j) {
      if (Key::at(key, depth + j) != chunk(j)) return false;
    }
    return true;
  }

  [[nodiscard]] std::uint64_t pack() const noexcept {
    return static_cast<std::uint64_t>(depth & 0xFFFF) |
           (static_cast<std::uint64_t>(prefix_len & 0xFFFF) << 16) |
           (static_cast<std::uint64_t>(prefix) << 32);
  }
  [[nodiscard]] static PathHeader unpack(std::uint64_t word) noexcept {
    return {static_cast<std::uint32_t>(word & 0xFFFF),
            static_cast<std::uint32_t>((word >> 16) & 0xFFFF),
            static_cast<std::uint32_t>(word >> 32)};
  }
  // A header at `depth` whose prefix is chunks [depth, depth + len) of `key`.
  [[nodiscard]] static PathHeader from_key(std::uint32_t depth, std::uint32_t len,
                                           std::string_view key) noexcept {
    PathHeader h{depth, len, 0};
    for (unsigned j = 0; j < h.stored(); ++j) h.set_chunk(j, Key::at(key, depth + j));
    return h;
  }
};

// A reference (child slot, END slot, root field) is 0 = empty; an item reference (always even)
// with its low bit set = a leaf; any other value = the pool offset of a child node.
[[nodiscard]] inline bool is_leaf(std::uint64_t ref) noexcept { return (ref & 1u) != 0; }
[[nodiscard]] inline std::uint64_t leaf_ref(std::uint64_t item) noexcept { return item | 1u; }
[[nodiscard]] inline std::uint64_t leaf_item(std::uint64_t ref) noexcept { return ref & ~1ull; }

}  // namespace pmcached::engine::radix

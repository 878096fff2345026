// WORT node layout (persistent, layout version 1) and the nibble/reference helpers shared by
// the engine and its tests.
//
// Node, 144 bytes, one allocator block, all fields aligned 8-byte words:
//   +0    u64 header        bits  0..15  depth      nibble index where the compressed prefix starts
//                           bits 16..31  prefix_len number of nibbles collapsed into this node
//                           bits 32..63  prefix     the first min(prefix_len, 8) prefix nibbles,
//                                                   nibble j in bits 32+4j .. 35+4j
//   +8    u64 children[16]  child for nibble value 0..15 at position depth + prefix_len
//   +136  u64 end_slot      the leaf whose key ends exactly at nibble depth + prefix_len
// A reference (child, end slot, root field): 0 = empty; an item reference (always even) with
// its low bit set = a leaf; any other value = the pool offset of a child node.
//
// Keys are byte strings read as nibbles, most significant nibble of each byte first, so the
// tree order is the byte order. Prefix nibbles beyond the 8 stored ones are optimistic (hybrid
// path compression, seed 002 §3.3): readers skip them and compare the full key at the leaf.
// The header is one 8-byte word, so depth, length and stored prefix change in one failure-
// atomic store (seed 002 §3.4); "branch" = depth + prefix_len is the absolute position of the
// nibble that selects a child, and no operation ever changes a node's branch.
//
// Thread safety: plain data; the engine's lock orders all access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace pmcached::engine::wort {

inline constexpr std::uint32_t kNodeLayoutVersion = 1;
inline constexpr unsigned kFanout = 16;
inline constexpr unsigned kStoredPrefixNibbles = 8;

struct Node {
  std::uint64_t header;
  std::uint64_t children[kFanout];
  std::uint64_t end_slot;
};
static_assert(sizeof(Node) == 144, "WORT node layout v1 is 144 bytes");

// The unpacked 8-byte header.
struct Header {
  std::uint32_t depth = 0;
  std::uint32_t prefix_len = 0;
  std::uint32_t prefix = 0;  // packed stored nibbles

  [[nodiscard]] std::uint32_t branch() const noexcept { return depth + prefix_len; }
  [[nodiscard]] unsigned stored() const noexcept {
    return prefix_len < kStoredPrefixNibbles ? prefix_len : kStoredPrefixNibbles;
  }
  [[nodiscard]] unsigned nibble(unsigned j) const noexcept { return (prefix >> (4 * j)) & 0xF; }
  void set_nibble(unsigned j, unsigned value) noexcept {
    prefix = (prefix & ~(0xFu << (4 * j))) | ((value & 0xFu) << (4 * j));
  }

  [[nodiscard]] std::uint64_t pack() const noexcept {
    return static_cast<std::uint64_t>(depth & 0xFFFF) |
           (static_cast<std::uint64_t>(prefix_len & 0xFFFF) << 16) |
           (static_cast<std::uint64_t>(prefix) << 32);
  }
  [[nodiscard]] static Header unpack(std::uint64_t word) noexcept {
    return {static_cast<std::uint32_t>(word & 0xFFFF),
            static_cast<std::uint32_t>((word >> 16) & 0xFFFF),
            static_cast<std::uint32_t>(word >> 32)};
  }
};

// Nibble `i` of `key` (i < nibble_count(key)).
[[nodiscard]] inline unsigned nibble(std::string_view key, std::size_t i) noexcept {
  const auto byte = static_cast<unsigned char>(key[i / 2]);
  return (i % 2 == 0) ? (byte >> 4) : (byte & 0xFu);
}
[[nodiscard]] inline std::size_t nibble_count(std::string_view key) noexcept {
  return key.size() * 2;
}

// A header at `depth` whose prefix is nibbles [depth, depth + len) of `key`.
[[nodiscard]] inline Header header_from_key(std::uint32_t depth, std::uint32_t len,
                                            std::string_view key) noexcept {
  Header h{depth, len, 0};
  for (unsigned j = 0; j < h.stored(); ++j) h.set_nibble(j, nibble(key, depth + j));
  return h;
}

// Length of the common nibble run of `a` and `b` starting at nibble `from`.
[[nodiscard]] inline std::uint32_t common_nibbles(std::string_view a, std::string_view b,
                                                  std::size_t from) noexcept {
  const std::size_t end = nibble_count(a) < nibble_count(b) ? nibble_count(a) : nibble_count(b);
  std::size_t i = from;
  while (i < end && nibble(a, i) == nibble(b, i)) ++i;
  return static_cast<std::uint32_t>(i - from);
}

[[nodiscard]] inline bool is_leaf(std::uint64_t ref) noexcept { return (ref & 1u) != 0; }
[[nodiscard]] inline std::uint64_t leaf_ref(std::uint64_t item) noexcept { return item | 1u; }
[[nodiscard]] inline std::uint64_t leaf_item(std::uint64_t ref) noexcept { return ref & ~1ull; }

}  // namespace pmcached::engine::wort

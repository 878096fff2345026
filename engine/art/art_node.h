// Node layouts of the adaptive radix engines `woart` and `artcow` (persistent, layout version 1),
// seed 002 §3.5–3.6, Figure 3.5. Both engines use the same four node types and 8-bit chunks; they
// differ in how a change becomes durable (art_factory.h), not in what a node looks like.
//
// Every node starts with the same 24 bytes:
//   +0   u64 header    radix::PathHeader<8>: depth, prefix_len, up to 4 stored prefix bytes.
//                      `artcow` keeps no depth (its depth bits are 0; the path implies it).
//   +8   u64 type      NodeType in the low byte, written once when the node is built
//   +16  u64 end_slot  the leaf whose key ends exactly at the branch position (0 = none)
// then, by type (children[] hold references as in radix_key.h):
//   N4    u64 keys_slots  bytes 0..3 partial keys, bytes 4..7 their slots: 0 = empty entry,
//                         s = children[s - 1]. Entries in use are bytes 0..count-1, in ascending
//                         key order; the word is rewritten with ONE 8-byte store (Alg. 3).
//         u64 children[4]                                                   64 bytes in all
//   N16   u64 bitmap      bit i set = entry i in use (Alg. 4); entries unsorted in `woart`
//         u8  keys[16], u64 children[16]                                   176 bytes
//   N48   u8  index[256]  0 = no child for that byte, s = children[s - 1] (Alg. 5); free pointer
//                         slots are those no index entry names
//         u64 children[48]                                                 664 bytes
//   N256  u64 children[256], indexed by the byte, as a WORT node          2072 bytes
//
// A node holds its type's number of children, within these bounds after every operation
// (growth copies into the next type when full, shrinking copies into the previous type when a
// delete would go below the minimum; the gap avoids flapping at one boundary):
//   N4 1..4 (the root: 0..4)   N16 4..16   N48 13..48   N256 38..256
//
// Layout history: docs/LAYOUTS.md.
//
// Thread safety: plain data; the engine's lock orders all access.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/radix/radix_key.h"

namespace pmcached::engine::art {

inline constexpr std::uint32_t kNodeLayoutVersion = 1;

using Key = radix::Chunks<8>;
using Header = radix::PathHeader<8>;

enum class NodeType : std::uint8_t { kN4 = 1, kN16 = 2, kN48 = 3, kN256 = 4 };

struct NodeBase {
  std::uint64_t header;
  std::uint64_t type;
  std::uint64_t end_slot;
};

struct Node4 : NodeBase {
  std::uint64_t keys_slots;
  std::uint64_t children[4];
};

struct Node16 : NodeBase {
  std::uint64_t bitmap;
  std::uint8_t keys[16];
  std::uint64_t children[16];
};

struct Node48 : NodeBase {
  std::uint8_t index[256];
  std::uint64_t children[48];
};

struct Node256 : NodeBase {
  std::uint64_t children[256];
};

static_assert(sizeof(Node4) == 64, "ART N4 layout v1 is one cache line");
static_assert(sizeof(Node16) == 176, "ART N16 layout v1 is 176 bytes");
static_assert(sizeof(Node48) == 664, "ART N48 layout v1 is 664 bytes");
static_assert(sizeof(Node256) == 2072, "ART N256 layout v1 is 2072 bytes");

struct TypeInfo {
  const char* name;
  std::size_t bytes;
  unsigned capacity;
  unsigned min_children;  // fewer only for the root (and N4, whose floor is the >= 2 rule)
};

// Info for a type byte; nullptr for a value that is no node type (a corrupt node).
[[nodiscard]] inline const TypeInfo* type_info(std::uint64_t type_word) noexcept {
  static constexpr TypeInfo kInfo[] = {{"n4", sizeof(Node4), 4, 1},
                                       {"n16", sizeof(Node16), 16, 4},
                                       {"n48", sizeof(Node48), 48, 13},
                                       {"n256", sizeof(Node256), 256, 38}};
  if (type_word < 1 || type_word > 4) return nullptr;
  return &kInfo[type_word - 1];
}
[[nodiscard]] inline const TypeInfo& type_info(NodeType type) noexcept {
  return *type_info(static_cast<std::uint64_t>(type));
}

// The N4 key/slot word, unpacked.
[[nodiscard]] inline unsigned n4_key(std::uint64_t word, unsigned j) noexcept {
  return static_cast<unsigned>(word >> (8 * j)) & 0xFFu;
}
[[nodiscard]] inline unsigned n4_slot(std::uint64_t word, unsigned j) noexcept {
  return static_cast<unsigned>(word >> (8 * (4 + j))) & 0xFFu;
}
[[nodiscard]] inline std::uint64_t n4_entry(unsigned j, unsigned key, unsigned slot) noexcept {
  return (static_cast<std::uint64_t>(key & 0xFFu) << (8 * j)) |
         (static_cast<std::uint64_t>(slot & 0xFFu) << (8 * (4 + j)));
}

}  // namespace pmcached::engine::art

// wB+-Tree node layout (persistent, layout version 2): the bitmap + slot-array variant of seed 002
// §2.2 (Chen and Jin's wB+-Tree), all nodes in PM. Plain layout types and constants only, so that
// the tests can read a pool without the engine's code (tests/wbtree/wbtree_inspect.cc).
//
// Node header: one 64-byte cache line.
//   +0   u64 bitmap     bit 0 = "slot array valid"; bit 1+i = entry i is in use
//   +8   u8  count      number of entries listed in order[]
//   +9   u8  order[54]  order[0..count) = entry indexes in key order (the slot array)
//   +63  u8  kind       1 = leaf, 2 = inner
// While bit 0 is set, order[0..count) lists exactly the entries whose bits are set, sorted by key.
// While it is clear (an entry insert or delete in flight), the bitmap alone says which entries
// exist and recovery rebuilds order[] from it.
//
// Leaf (480 bytes, an allocator size class): header + 52 x u64 entry = tag | ref
// (btree::tagged(ref, btree::key_tag(key)), engine/btree/key_tag.h): bits [0, 48) the item
// reference (keys are out of line, read through EngineContext::key_of), bits [48, 63) a 15-bit
// hash of the entry's key, bit 63 zero. Why: an exact-match search (lookup; upsert and erase of
// an existing key) scans the in-use entries' tags and reads a key only where the tag matches —
// about one item read per hit and almost none per miss, instead of the ~6 key reads of a binary
// search over order[]. Only an insert of a new key still binary-searches (for its position in
// order[]). The tag is written in the same 8-byte store as the reference, so it costs no flush or
// fence and always describes the reference beside it (tests/wbtree/wbtree_inspect.cc checks it;
// recovery does not, see wbtree_recover.cc). Layout version 1 (bare references) is refused by its
// meta magic. Inner (928 bytes, in the 960-byte class): header + 54 x
// {u64 key_block, u64 child}. A key block is an index block {u8 len; len key bytes} owned by
// exactly one inner entry. The first entry in key order of an inner node has no key (minus
// infinity): its key_block is 0 (the engine keeps it so; recovery restores it). An entry of inner
// node X with key k covers the keys in [k, next entry's key) within X's own range.
//
// Fan-out: inner 54 — the most the one-line header can order (64 - 8 bitmap - 1 count - 1 kind =
// 54 order bytes; the bitmap needs 1 + 54 bits); 16-byte entries leave the node in the 960-byte
// class. Leaf 52 — the largest leaf in the 480-byte class (64 + 52 * 8 = 480); 54 entries would
// need 496 bytes, i.e. the 608-byte class with 112 bytes unused.
//
// Thread safety: plain data; the engine's lock orders all access.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pmcached::engine::wbtree {

inline constexpr std::uint32_t kNodeLayoutVersion = 2;
inline constexpr std::uint8_t kLeafKind = 1;
inline constexpr std::uint8_t kInnerKind = 2;
inline constexpr unsigned kLeafFanout = 52;
inline constexpr unsigned kInnerFanout = 54;
inline constexpr std::uint64_t kValidBit = 1;  // bitmap bit 0: order[] is valid

// The meta block's magic: the 8 bytes "WBTREE02" (02 = kNodeLayoutVersion) read as a
// little-endian u64. A pool of another layout version has another magic and is refused at open.
inline constexpr std::uint64_t kMetaMagic = [] {
  constexpr char kText[] = "WBTREE02";
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(kText[i]);
  return v;
}();

// Meta.log (btree::Meta) during a split: the split redo log. log[0] is written last and is the
// commit of the log; it is cleared first when the split is done.
inline constexpr unsigned kLogNode = 0;     // N, the node being split
inline constexpr unsigned kLogSibling = 1;  // S, N's new right sibling (upper half)
inline constexpr unsigned kLogKey = 2;      // K, the separator key block of S
inline constexpr unsigned kLogParent = 3;   // P, N's parent; 0 for a root split
inline constexpr unsigned kLogRoot = 4;     // R, the new root (root split only)

struct NodeHeader {
  std::uint64_t bitmap;
  std::uint8_t count;
  std::uint8_t order[kInnerFanout];
  std::uint8_t kind;
};
static_assert(sizeof(NodeHeader) == 64, "wbtree node header is one cache line");

struct Leaf {
  NodeHeader header;
  std::uint64_t entries[kLeafFanout];  // btree::tagged(ref, key_tag(key)); see above
};
static_assert(sizeof(Leaf) == 480, "wbtree leaf layout v2 is 480 bytes");

struct InnerEntry {
  std::uint64_t key_block;  // 0: minus infinity (the first entry in key order)
  std::uint64_t child;
};

struct Inner {
  NodeHeader header;
  InnerEntry entries[kInnerFanout];
};
static_assert(sizeof(Inner) == 928, "wbtree inner layout v2 is 928 bytes");

[[nodiscard]] constexpr std::uint64_t entry_bit(unsigned entry) noexcept {
  return std::uint64_t{1} << (entry + 1);
}
[[nodiscard]] constexpr unsigned fanout_of(std::uint8_t kind) noexcept {
  return kind == kLeafKind ? kLeafFanout : kInnerFanout;
}
[[nodiscard]] constexpr std::size_t node_size_of(std::uint8_t kind) noexcept {
  return kind == kLeafKind ? sizeof(Leaf) : sizeof(Inner);
}
// The bitmap bits entries may use for a node of `kind` (bit 0 excluded).
[[nodiscard]] constexpr std::uint64_t entry_mask(std::uint8_t kind) noexcept {
  return ((std::uint64_t{1} << fanout_of(kind)) - 1) << 1;
}

}  // namespace pmcached::engine::wbtree

// wB+-Tree node layout (persistent, layout version 4): the bitmap + slot-array variant of seed 002
// §2.2 (Chen and Jin's wB+-Tree), all nodes in PM. Plain layout types and constants only, so that
// the tests can read a pool without the engine's code (tests/wbtree/wbtree_inspect.cc).
//
// Node header: one 64-byte cache line.
//   +0   u64 bitmap     bit 0 = "slot array valid"; bit 1+i = entry i is in use
//   +8   u8  count      number of entries listed in order[]
//   +9   u8  order[54]  order[0..count) = entry indexes in key order (the slot array)
//   +63  u8  kind       1 = leaf, 2 = inner
// The slot array is valid when bit 0 is set AND order[0..count) lists exactly the entries whose
// bits are set (slot_array_lists_bitmap below); a valid slot array is sorted by key. Otherwise (a
// change in flight at a crash) the bitmap alone says which entries exist and recovery rebuilds
// order[] from it. A delete clears bit 0 first. An insert does not: its new slot array lists the
// new entry, whose bit is still clear, so however much of it a crash lets reach PM before the
// commit, it cannot list exactly the old bitmap's entries unless it still is the old, sorted one
// (wbtree_entry.cc; every mix of old and new 8-byte words is checked by
// tests/wbtree/wbtree_slot_array_test.cc).
//
// Leaf (480 bytes, an allocator size class): header + 52 x u64 entry = tag | ref
// (btree::tagged(ref, btree::key_tag(key)), engine/btree/key_tag.h): bits [0, 48) the item
// reference (keys are out of line, read through EngineContext::key_of), bits [48, 63) a 15-bit hash
// of the entry's key, bit 63 zero. Why: an exact-match search (lookup; upsert and erase of an
// existing key) scans the in-use entries' tags and reads a key only where the tag matches — about
// one item read per hit and almost none per miss, instead of the ~6 key reads of a binary search
// over order[]. Only an insert of a new key still binary-searches (for its position in order[]).
// The tag is written in the same 8-byte store as the reference, so it costs no flush or fence and
// always describes the reference beside it (tests/wbtree/wbtree_inspect.cc checks it; recovery does
// not, see wbtree_recover.cc).
//
// Inner (1200 bytes, an allocator size class): header + 54 x {u64 key_block, u64 child} (928
// bytes) + the key heads (272 bytes, below). A key block is an index block {u8 len; len key
// bytes} owned by exactly one inner entry. The first entry in key order of an inner node has no
// key (minus infinity): its key_block is 0 (the engine keeps it so; recovery restores it). An
// entry of inner node X with key k covers the keys in [k, next entry's key) within X's own range.
//
// Key heads (engine/btree/key_heads.h): a prefix shared by the node's keyed entries (at most 55
// bytes) and per entry the 4 bytes of its key after it, so that the binary search of a descent
// compares integers in the node and reads a key block only on a tie (without them, each of its ~6
// probes per level would read a key block, allocated apart from the node). They are derived data:
// the engine keeps them in step with the node's keys in working memory but never flushes them,
// and recovery recomputes them for every inner node (wbtree_recover.cc), so no crash state of
// theirs matters.
//
// Fan-out: inner 54 — the most the one-line header can order (64 - 8 bitmap - 1 count - 1 kind =
// 54 order bytes; the bitmap needs 1 + 54 bits); 16-byte entries and 4-byte heads with a 56-byte
// prefix fill the 1200-byte class exactly. Leaf 52 — the largest leaf in the 480-byte class
// (64 + 52 * 8 = 480); 54 entries would need 496 bytes, i.e. the 608-byte class with 112 bytes
// unused.
//
// Layout history (versions 1-3, and why their pools are refused): docs/LAYOUTS.md.
//
// Thread safety: plain data; the engine's lock orders all access.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/btree/key_heads.h"

namespace pmcached::engine::wbtree {

inline constexpr std::uint32_t kNodeLayoutVersion = 4;
inline constexpr std::uint8_t kLeafKind = 1;
inline constexpr std::uint8_t kInnerKind = 2;
inline constexpr unsigned kLeafFanout = 52;
inline constexpr unsigned kInnerFanout = 54;
inline constexpr std::uint64_t kValidBit = 1;  // bitmap bit 0: see slot_array_valid()

// The meta block's magic: the 8 bytes "WBTREE04" (04 = kNodeLayoutVersion) read as a
// little-endian u64. A pool of another layout version has another magic and is refused at open
// (why each older version cannot be read: docs/LAYOUTS.md).
inline constexpr std::uint64_t kMetaMagic = [] {
  constexpr char kText[] = "WBTREE04";
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
static_assert(sizeof(Leaf) == 480, "wbtree leaf layout is 480 bytes");

struct InnerEntry {
  std::uint64_t key_block;  // 0: minus infinity (the first entry in key order)
  std::uint64_t child;
};

struct Inner {
  NodeHeader header;
  InnerEntry entries[kInnerFanout];
  // Derived, never flushed, recomputed by recovery (see above).
  btree::KeyPrefix prefix;            // shared by every keyed in-use entry's key
  std::uint32_t heads[kInnerFanout];  // heads[e]: entry e's key after the prefix
};
static_assert(sizeof(Inner) == 1200, "wbtree inner layout is 1200 bytes");
// The bytes of an inner node that are persisted: all but its key heads.
inline constexpr std::size_t kInnerPersistedBytes = offsetof(Inner, prefix);
static_assert(kInnerPersistedBytes == 928);

[[nodiscard]] constexpr std::uint64_t entry_bit(unsigned entry) noexcept {
  return std::uint64_t{1} << (entry + 1);
}
[[nodiscard]] constexpr unsigned fanout_of(std::uint8_t kind) noexcept {
  return kind == kLeafKind ? kLeafFanout : kInnerFanout;
}
[[nodiscard]] constexpr std::size_t node_size_of(std::uint8_t kind) noexcept {
  return kind == kLeafKind ? sizeof(Leaf) : sizeof(Inner);
}
// What of a node is flushed when it is built out of place: all but an inner node's key heads.
[[nodiscard]] constexpr std::size_t persisted_size_of(std::uint8_t kind) noexcept {
  return kind == kLeafKind ? sizeof(Leaf) : kInnerPersistedBytes;
}
// The bitmap bits entries may use for a node of `kind` (bit 0 excluded).
[[nodiscard]] constexpr std::uint64_t entry_mask(std::uint8_t kind) noexcept {
  return ((std::uint64_t{1} << fanout_of(kind)) - 1) << 1;
}

// Whether order[0..count) lists each entry whose bitmap bit is set exactly once, and no other.
// With bit 0 set, that is what makes the slot array valid (see the top of this file).
[[nodiscard]] inline bool slot_array_lists_bitmap(const NodeHeader& h) noexcept {
  if (h.count > fanout_of(h.kind)) return false;
  std::uint64_t listed = 0;
  for (unsigned pos = 0; pos < h.count; ++pos) {
    const unsigned e = h.order[pos];
    if (e >= fanout_of(h.kind) || (listed & entry_bit(e)) != 0) return false;
    listed |= entry_bit(e);
  }
  return listed == (h.bitmap & entry_mask(h.kind));
}

[[nodiscard]] inline bool slot_array_valid(const NodeHeader& h) noexcept {
  return (h.bitmap & kValidBit) != 0 && slot_array_lists_bitmap(h);
}

}  // namespace pmcached::engine::wbtree

// NV-Tree leaf layout (persistent, layout version 2) and the reads every path shares: the live
// entries of a leaf, a key's entry, and the structural check recovery runs before trusting one.
//
// Leaf, 480 bytes (an allocator size class), all fields aligned 8-byte words:
//   +0   u64 count        entries appended and committed; the commit word of every change
//   +8   u64 next         the next leaf of the chain, in key order (0: the last leaf)
//   +16  u64 entries[58]  append-only, in commit order
// Fan-out 58: the most 8-byte entries that fit the 480-byte class after the two header words
// (16 + 58 * 8 = 480). The next smaller class (384 bytes) would hold 46; a bigger leaf makes
// every lookup scan (and read the out-of-line key of) more entries, a smaller one splits more.
//
// Entries (keys live out of line, in the items):
//   positive  btree::tagged(ref, key_tag(key)): an item reference (nonzero, below 2^48) and the
//             15-bit tag of its key (engine/btree/key_tag.h); the key of that item maps to it.
//             A search reads an item's key only where the tag matches.
//   negative  kDead | i: entry i of this leaf (an earlier, positive entry) is dead. The dead
//             entry is named by position, not by key, because its item may already be freed and
//             its block reused: a dead entry's key is never read.
//   killed in place  entries[i] == kDead | i: a negative entry naming itself. Only a delete whose
//             leaf is full while the heap has no block for the compaction does this (one atomic
//             8-byte store + persist over the entry): an erase never fails.
// An entry is live when it is positive and no negative entry names it. Invariants: count <= 58;
// a negative entry names an earlier positive entry (or is itself killed in place), never one
// already named; a key is live at most once in a leaf; a reachable leaf has a live entry.
//
// Layout history (version 1, refused by its meta magic): docs/LAYOUTS.md.
//
// Thread safety: plain data and pure functions; the engine's lock orders all access.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/btree/key_tag.h"
#include "engine/index_engine.h"

namespace pmcached::engine::nvtree {

inline constexpr std::uint32_t kLeafLayoutVersion = 2;
inline constexpr unsigned kLeafEntries = 58;
inline constexpr unsigned kHalfLeaf = kLeafEntries / 2;  // live entries a compaction keeps at most
inline constexpr std::uint64_t kDead = std::uint64_t{1} << 63;

struct Leaf {
  std::uint64_t count;
  std::uint64_t next;
  std::uint64_t entries[kLeafEntries];
};
static_assert(sizeof(Leaf) == 480, "NV-Tree leaf layout v2 is 480 bytes");

[[nodiscard]] constexpr bool is_negative(std::uint64_t entry) noexcept {
  return (entry & kDead) != 0;
}
[[nodiscard]] constexpr std::uint64_t negative(unsigned position) noexcept {
  return kDead | position;
}
[[nodiscard]] constexpr unsigned target(std::uint64_t negative_entry) noexcept {
  return static_cast<unsigned>(negative_entry & ~kDead);
}
// The bytes of a leaf that hold data: the header words and `count` entries.
[[nodiscard]] constexpr std::size_t used_bytes(std::uint64_t count) noexcept {
  return 16 + 8 * count;
}

// Bit i set: entry i is live. The leaf must be valid (leaf_problem() == "").
[[nodiscard]] inline std::uint64_t live_mask(const Leaf& leaf) noexcept {
  std::uint64_t mask = 0;
  for (unsigned i = 0; i < leaf.count; ++i) {
    const std::uint64_t e = leaf.entries[i];
    if (is_negative(e)) {
      mask &= ~(std::uint64_t{1} << target(e));
    } else {
      mask |= std::uint64_t{1} << i;
    }
  }
  return mask;
}

[[nodiscard]] inline unsigned live_count(const Leaf& leaf) noexcept {
  return static_cast<unsigned>(std::popcount(live_mask(leaf)));
}

inline constexpr unsigned kNotFound = kLeafEntries;

// The position of the live entry for `key` (whose tag is `tag`), or kNotFound. Scans backwards
// from the newest entry with a set of the positions named dead so far, and reads the key of live
// entries with a matching tag only.
template <typename KeyOf>
[[nodiscard]] unsigned find_entry(const Leaf& leaf, std::string_view key, std::uint64_t tag,
                                  const KeyOf& key_of) {
  std::uint64_t dead = 0;
  for (unsigned i = static_cast<unsigned>(leaf.count); i-- > 0;) {
    const std::uint64_t e = leaf.entries[i];
    if (is_negative(e)) {
      dead |= std::uint64_t{1} << target(e);
    } else if (btree::tag_of(e) == tag && (dead >> i & 1) == 0 && key_of(btree::ref_of(e)) == key) {
      return i;
    }
  }
  return kNotFound;
}

// What is wrong with the layout of a leaf, or "" (keys are not read).
[[nodiscard]] inline std::string leaf_problem(const Leaf& leaf) {
  if (leaf.count > kLeafEntries) return "count " + std::to_string(leaf.count) + " > 58";
  std::uint64_t positive = 0;
  std::uint64_t killed = 0;
  for (unsigned i = 0; i < leaf.count; ++i) {
    const std::uint64_t e = leaf.entries[i];
    if (e == 0) return "entry " + std::to_string(i) + " is 0";
    if (!is_negative(e)) {
      positive |= std::uint64_t{1} << i;
      continue;
    }
    const std::uint64_t t = e & ~kDead;
    if (t == i) {  // killed in place
      killed |= std::uint64_t{1} << t;
      continue;
    }
    if (t > i || (positive >> t & 1) == 0) {
      return "negative entry " + std::to_string(i) + " names " + std::to_string(t) +
             ", not an earlier positive entry";
    }
    if ((killed >> t & 1) != 0) {
      return "entry " + std::to_string(t) + " is killed twice";
    }
    killed |= std::uint64_t{1} << t;
  }
  if ((positive & ~killed) == 0) return "no live entry";
  return {};
}

}  // namespace pmcached::engine::nvtree

// The FPTree leaf (seed 002 §2.2, Fig. 2.1; Oukid et al., SIGMOD 2016): a persistent node of
// unsorted entries, a validity bitmap and one 1-byte fingerprint per entry.
//
// Layout v1 (448 bytes, in the allocator's 480-byte class):
//   line 0      u64 bitmap (bit i: slot i is live), u64 next (the following leaf in key order,
//               0 for the last), u8 fingerprints[48]
//   lines 1..6  u64 refs[48]: item references (keys live out of line, in the items)
// 48 slots fill the first line exactly with the bitmap, the chain pointer and the fingerprints,
// so a lookup reads one line to know which (usually one) entry to compare, and an insert
// flushes the entry's line and line 0 twice (fingerprint, then the bitmap that commits it).
// The meta block's magic "FPTREE01" (fptree_engine.h) names this layout version; the layout
// history is in docs/LAYOUTS.md.
//
// Thread safety: plain functions over a leaf the caller's lock protects.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "engine/btree/btree_engine.h"
#include "engine/index_engine.h"

namespace pmcached::engine::fptree {

inline constexpr unsigned kLeafSlots = 48;
inline constexpr std::uint64_t kAllSlots = (std::uint64_t{1} << kLeafSlots) - 1;

struct Leaf {
  std::uint64_t bitmap;
  std::uint64_t next;
  std::uint8_t fingerprints[kLeafSlots];
  std::uint64_t refs[kLeafSlots];
};
static_assert(sizeof(Leaf) == 448);
static_assert(offsetof(Leaf, refs) == 64);

using KeyOf = std::function<std::string_view(ItemRef)>;

// The 1-byte hash of a key that a lookup compares before any key.
[[nodiscard]] std::uint8_t fingerprint(std::string_view key) noexcept;

// The slot holding `key` (fingerprint `fp`), or -1.
[[nodiscard]] int find_slot(const Leaf& leaf, std::string_view key, std::uint8_t fp,
                            const KeyOf& key_of);

// The lowest free slot, or -1 when the leaf is full.
[[nodiscard]] inline int free_slot(const Leaf& leaf) noexcept {
  const std::uint64_t used = leaf.bitmap | ~kAllSlots;
  return used == ~std::uint64_t{0} ? -1 : std::countr_one(used);
}

// Appends the live entries of `leaf` with their keys.
void collect(const Leaf& leaf, const KeyOf& key_of, std::vector<btree::KeyedRef>& out);

// The bitmap of the entries of a full leaf that move to the right half of a split (the upper
// half by key), and the lowest key among them (the new leaf's bound).
struct SplitPlan {
  std::uint64_t right_bits = 0;
  std::string_view bound;
};
[[nodiscard]] SplitPlan plan_split(const Leaf& leaf, const KeyOf& key_of);

}  // namespace pmcached::engine::fptree

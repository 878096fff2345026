// The wbtree engine's invariants checker, read from the pool directly through the layout types of
// engine/wbtree/wbtree_node.h (never through the engine's code). tests/index/inspectors.cc makes it
// the "wbtree" inspector of the shared harness (tests/index/index_harness.h).
//
// Checks: the meta block's magic, its split log all zero (no log left half-applied); every node in
// the heap, of kind leaf or inner, bit 0 ("slot array valid") set, count == popcount(bitmap),
// order[0..count) a permutation of the bitmap's entries sorted strictly by key; an inner node's
// first entry keyless (key block 0) and every other entry with an in-bounds key block; separators
// bound their subtrees (a child holds keys in [its key, the next key) within its parent's range);
// all leaves at one depth; no empty node but a root leaf, no one-child inner root; no block reached
// twice; leaf entries btree::tagged(ref, key_tag(key)): the reference in the region,
// nothing past the tag, the tag that of the referenced item's key; with KeyHeads::kCheck (a
// running or recovered tree, not a raw crash image: heads are never flushed, wbtree_node.h),
// every inner node's key prefix shared by its keyed entries and their heads matching their keys.
// Reports every block (meta, nodes, key blocks) with its layout bytes and the (key, ref) of every
// leaf entry in key order (keys read as test items, testing::item_key).
//
// Thread safety: a pure function over a region nobody writes meanwhile.
#pragma once

#include <cstdint>

#include "engine/pm/pm_region.h"
#include "tests/index/tree_report.h"

namespace pmcached::engine::wbtree::testing {

enum class KeyHeads { kCheck, kSkip };

[[nodiscard]] ::pmcached::engine::testing::TreeReport inspect_wbtree(
    const pm::PmRegion& region, std::uint64_t pool_root, KeyHeads heads = KeyHeads::kCheck);

}  // namespace pmcached::engine::wbtree::testing

// The NV-Tree invariants checker (the nvtree engine's inspector, tests/index/tree_report.h): reads
// the meta block and the leaf chain straight from the pool — its own decoding of the layout of
// engine/nvtree/nvtree_leaf.h, never the engine's code — and checks:
//   the meta block is in bounds and tagged "NVTREE02"; every leaf is in bounds, reached once;
//   count <= 58; no entry is 0; a negative entry names an earlier positive entry (or itself: an
//   entry killed in place), and no entry is killed twice; no key is live twice in a leaf; no leaf
//   is without a live entry; the chain is ordered by key range (every live key of a leaf is below
//   every live key of the next), hence every key is reachable exactly once.
// Report: nodes = the meta block (64 bytes) and every leaf (480 bytes); leaves = (key, item) of
// every live entry, in key order (keys read from the test items, testing::item_key).
//
// Thread safety: a pure function over a region nobody writes meanwhile.
#pragma once

#include <cstdint>

#include "engine/pm/pm_region.h"
#include "tests/index/tree_report.h"

namespace pmcached::engine::nvtree::testing {

[[nodiscard]] engine::testing::TreeReport inspect_nvtree(const pm::PmRegion& region,
                                                         std::uint64_t pool_root);

}  // namespace pmcached::engine::nvtree::testing

// The invariants of an fptree pool, read from the layout directly (engine/fptree/fptree_leaf.h,
// engine/btree/btree_engine.h), never through the engine's code: the meta block has its magic
// and no split log left (not even half applied); every leaf of the chain is in the heap, has only
// its 48 slot bits, is not empty, holds each key once with the fingerprint of that key; the
// chain is ordered by key range (every key of a leaf is below every key of the next) and reaches
// no leaf twice.
//
// Thread safety: a pure function over a region nobody writes meanwhile.
#pragma once

#include <cstdint>

#include "engine/pm/pm_region.h"
#include "tests/index/tree_report.h"

namespace pmcached::engine::fptree::testing {

[[nodiscard]] engine::testing::TreeReport inspect_fptree(const pm::PmRegion& region,
                                                         std::uint64_t root);

}  // namespace pmcached::engine::fptree::testing

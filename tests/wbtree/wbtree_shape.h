// Test helpers that read a wbtree's shape from the pool directly (engine/wbtree/wbtree_node.h):
// the tree's height and node counts, the keys under each node, the nodes whose slot array is
// marked invalid (bit 0 clear), and the engine's `stats engine` counters.
//
// Thread safety: pure functions over a region nobody writes meanwhile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/pm/pm_region.h"
#include "tests/index/index_crash.h"
#include "tests/index/index_harness.h"

namespace pmcached::engine::wbtree::testing {

using ::pmcached::engine::testing::Harness;
using ::pmcached::engine::testing::Op;

inline constexpr const char* kEngine = "wbtree";

struct Shape {
  std::size_t height = 0;  // nodes on a root-to-leaf path (0: no tree)
  std::size_t leaves = 0, inners = 0;
  bool root_is_leaf = false;
  unsigned root_count = 0;
};

// The pool's root field (the meta block) in a raw image or region.
[[nodiscard]] std::uint64_t meta_of(const pm::PmRegion& region);
[[nodiscard]] std::uint64_t tree_root(const pm::PmRegion& region);  // meta.root, 0 if none
[[nodiscard]] Shape shape_of(const pm::PmRegion& region);
// The keys under `node`, in key order (test items).
[[nodiscard]] std::vector<std::string> keys_under(const pm::PmRegion& region, std::uint64_t node);
// An inner node's children in key order.
[[nodiscard]] std::vector<std::uint64_t> children_of(const pm::PmRegion& region,
                                                     std::uint64_t node);
// Nodes reachable from meta.root whose slot array is not valid: bitmap bit 0 clear, or order[]
// not listing exactly the bitmap's entries (what a crashed insert leaves, wbtree_node.h).
struct InvalidNodes {
  std::size_t leaves = 0, inners = 0;
  std::size_t with_bit0_set = 0;  // of those, the ones whose bit 0 is set
};
[[nodiscard]] InvalidNodes invalid_nodes(const pm::PmRegion& region);

// Puts of be64(first), be64(first + step), ... (`count` keys).
[[nodiscard]] std::vector<Op> ascending(std::uint64_t first, std::uint64_t count,
                                        std::int64_t step = 1);

}  // namespace pmcached::engine::wbtree::testing

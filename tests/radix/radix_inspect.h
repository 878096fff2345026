// Structural invariants of the radix engines (wort, woart, artcow), checked by reading the pool
// directly — never through the engine's code. A per-engine NodeDecoder turns a node offset into a
// NodeView (the node's layout read from engine/wort/wort_node.h or engine/art/art_node.h, plus the
// layout-specific problems it found); inspect_tree() walks the tree through the decoder and checks
// what holds for every radix engine. tests/index/inspectors.cc makes it the radix engines'
// inspector for the shared harness (tests/index/index_harness.h).
//
// Thread safety: pure functions over a region nobody writes meanwhile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/index_engine.h"
#include "engine/pm/pm_region.h"
#include "tests/index/tree_report.h"

namespace pmcached::engine::radix::testing {

using ::pmcached::engine::testing::item_key;
using ::pmcached::engine::testing::TreeReport;

// One node as its layout describes it.
struct NodeView {
  bool readable = false;  // false: nothing below could be read (problems say why)
  std::string type;       // "wort", "n4", "n16", "n48", "n256"
  unsigned bits = 4;      // chunk width: 4 (wort) or 8 (woart, artcow)
  // Header: artcow keeps no depth (header_depth must be 0; the path implies the depth).
  bool depth_in_header = true;
  std::uint32_t header_depth = 0;
  std::uint32_t prefix_len = 0;
  std::vector<unsigned> stored_prefix;  // the stored prefix chunks, first first
  std::uint64_t end_slot = 0;
  std::vector<std::pair<unsigned, std::uint64_t>> children;  // (chunk, ref), the node's own order
  std::size_t bytes = 0;                                     // the layout's size of this node
  std::vector<std::string> problems;                         // layout-specific
};

// Reads the node at `offset` (`is_root`: the pool's root field names it). Must check bounds.
using NodeDecoder =
    std::function<NodeView(const pm::PmRegion& region, std::uint64_t offset, bool is_root)>;

[[nodiscard]] NodeView decode_wort_node(const pm::PmRegion& region, std::uint64_t offset,
                                        bool is_root);
// `cow`: the artcow rules (no depth; N16 entries 0..count-1 sorted).
[[nodiscard]] NodeView decode_art_node(const pm::PmRegion& region, std::uint64_t offset,
                                       bool is_root, bool cow);
// The decoder of a radix engine by name; an empty function for an unknown name.
[[nodiscard]] NodeDecoder decoder_for(std::string_view engine);

// Checks: each node's header depth equals the depth its path implies (artcow: header depth 0);
// its prefix (stored chunks and the optimistic rest) is common to its leaves' keys; each leaf
// sits on its key's path (END slot: the key ends at the branch; child c: chunk c); chunks unique
// within a node; the root has no prefix; every non-root node has >= 2 references; no node is
// reached twice; the walk (END first, then chunks ascending) visits keys in strictly increasing
// order; plus every problem the decoder reports.
[[nodiscard]] TreeReport inspect_tree(const pm::PmRegion& region, std::uint64_t root,
                                      const NodeDecoder& decode);

// The node on `key`'s path whose branch position is `branch` (in chunks), or 0 if the path has
// none (it ends, reaches a leaf, or passes that position inside a prefix).
[[nodiscard]] std::uint64_t node_on_path(const pm::PmRegion& region, std::uint64_t root,
                                         const NodeDecoder& decode, std::string_view key,
                                         std::uint32_t branch);

// Chunk `i` of `key` at `bits` (4 or 8) per chunk, and the key's length in chunks.
[[nodiscard]] unsigned chunk_at(std::string_view key, std::size_t i, unsigned bits);
[[nodiscard]] std::size_t chunk_count(std::string_view key, unsigned bits);

}  // namespace pmcached::engine::radix::testing

// InnerArray: the NV-Tree's volatile internal nodes (seed 002 §2.2), all in ONE contiguous array
// of equal-sized nodes addressed by index, never by pointer, level by level from the root:
//   INs   (internal nodes) on every level but the last: node j of level l has its children at
//         level l + 1, indices j * (kFanout + 1) + c for c in [0, n]; keys[c] (c >= 1) is the
//         lowest key of child c's subtree, so a key goes to the child after the last keys[c] <= it.
//   PLNs  (parents of leaf nodes) on the last level: n leaves (1..kFanout + 1) in chain order,
//         leaves[i] with its lower bound keys[i]; keys[0] is the PLN's own lower bound (kept for
//         rebuilds, not used to route), keys[1..n-1] are its separators.
// Routing bounds only: a leaf's keys are >= its bound and < the next leaf's bound.
//
// The array is rebuilt — every node, from the flat list of (bound, leaf) that the PLNs hold — when
// a PLN would overflow (a leaf split into a full PLN) or would become empty (its last leaf
// unlinked). That rebuild is the cost the seed measures for NV-Tree; insert_after() and remove()
// report it. A rebuild fills each PLN with kPlnFill leaves (about half of kFanout + 1), leaving
// room for the splits that follow. Start-up builds the array with build() from the leaf chain.
//
// kFanout = 32 separators per node: a PLN or IN search is a binary search over at most 32 keys
// (5 comparisons in 1.3 KB of node), fan-out 33 keeps the tree shallow (3 inner levels route
// ~600K half-filled PLNs' worth of leaves), and a PLN overflows every 16 splits under it, as in
// NV-Tree, whose rebuilds are kept rather than hidden by a very wide PLN.
//
// The separators are heap strings (longer than std::string's inline buffer for mc-benchmark
// keys), so each node also keeps their shared prefix and 4-byte heads (engine/btree/key_heads.h),
// refreshed whenever its keys change: routing reads a separator only on a head tie.
//
// Thread safety: none; the engine's lock orders all access (writers exclusive).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/btree/key_heads.h"

namespace pmcached::engine::nvtree {

class InnerArray {
 public:
  static constexpr unsigned kFanout = 32;           // separators per node
  static constexpr unsigned kSlots = kFanout + 1;   // children (IN) or leaves (PLN) per node
  static constexpr unsigned kPlnFill = kSlots / 2;  // leaves per PLN after a rebuild

  struct Entry {
    std::string bound;  // lower bound of the leaf's keys ("" for the first leaf)
    std::uint64_t leaf;
  };
  // Where a leaf sits: PLN `pln` (index within the PLN level), slot `slot`.
  struct Position {
    std::uint32_t pln;
    std::uint32_t slot;
  };

  // Replaces everything with the leaves of `list` (in chain order); an empty list empties it.
  void build(std::vector<Entry> list);

  [[nodiscard]] bool empty() const noexcept { return leaf_count_ == 0; }
  [[nodiscard]] std::size_t leaf_count() const noexcept { return leaf_count_; }
  // Levels of nodes (INs and the PLN level); 0 when empty.
  [[nodiscard]] std::size_t levels() const noexcept { return level_begin_.size(); }
  [[nodiscard]] std::size_t node_count() const noexcept { return nodes_.size(); }
  // DRAM held: the node array and the separators' heap bytes.
  [[nodiscard]] std::size_t bytes() const noexcept;

  // The leaf whose key range holds `key` (the array must not be empty).
  [[nodiscard]] Position locate(std::string_view key) const noexcept;
  [[nodiscard]] std::uint64_t leaf(Position p) const noexcept { return pln(p).leaves[p.slot]; }
  // The leaf before `p` in key order, or 0 for the first leaf.
  [[nodiscard]] std::uint64_t predecessor(Position p) const noexcept;

  // The leaf at `p` is replaced by `leaf` with the same key range (a compaction or split).
  void replace(Position p, std::uint64_t leaf) noexcept { pln(p).leaves[p.slot] = leaf; }
  // A new leaf right after `p` takes the keys >= `bound` of p's range. True when the PLN was full
  // and the whole array was rebuilt.
  bool insert_after(Position p, std::string_view bound, std::uint64_t leaf);
  // The leaf at `p` leaves; its predecessor takes its key range (the next leaf, for the first of
  // a PLN). True when the PLN became empty and the whole array was rebuilt.
  bool remove(Position p);

  // The (bound, leaf) list the PLNs hold, in key order.
  [[nodiscard]] std::vector<Entry> entries() const;

 private:
  struct Node {
    std::uint32_t n = 0;  // IN: children; PLN: leaves
    std::array<std::string, kSlots> keys;
    std::array<std::uint64_t, kSlots> leaves{};  // PLN only
    btree::KeyPrefix prefix{};                   // shared by keys[1..n-1]
    std::array<std::uint32_t, kSlots> heads{};   // heads[c]: keys[c]'s head after prefix
  };

  // Recomputes the prefix and heads of `node` from its keys.
  static void refresh_heads(Node& node) noexcept;

  [[nodiscard]] std::size_t pln_level_begin() const noexcept { return level_begin_.back(); }
  [[nodiscard]] std::size_t pln_count() const noexcept { return nodes_.size() - pln_level_begin(); }
  [[nodiscard]] Node& pln(Position p) noexcept { return nodes_[pln_level_begin() + p.pln]; }
  [[nodiscard]] const Node& pln(Position p) const noexcept {
    return nodes_[pln_level_begin() + p.pln];
  }

  std::vector<Node> nodes_;
  std::vector<std::size_t> level_begin_;  // index of each level's first node, root level first
  std::size_t leaf_count_ = 0;
};

}  // namespace pmcached::engine::nvtree

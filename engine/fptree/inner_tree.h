// InnerTree: FPTree's inner nodes — a volatile B+-tree in DRAM that routes a key to the PM leaf
// whose key range holds it. It is never persisted: recover() rebuilds it from the leaf chain
// (build), and the engine keeps it in step with every leaf split (insert) and unlink (erase).
//
// A leaf's range starts at its bound (the smallest key it held when it was created or found at
// start-up) and ends at the next leaf's bound; the first leaf's range also takes every smaller
// key. Erasing a leaf gives its range to a neighbour, which is correct because the leaf chain
// keeps leaves in key order: any key between two leaves' keys may live in either.
//
// Fan-out: 256 children per node. Inner nodes live in DRAM, so a wide node costs no flushes, only
// a longer binary search (8 steps); 1M keys in ~30K leaves then need 2 inner levels (a 3-node
// path, the depth seed 002 Table 5.2 reports for FPTree) and 16M keys 3.
//
// Separators longer than std::string's inline buffer (mc-benchmark keys are) live on the heap, so
// each node also keeps their shared prefix and 4-byte heads (engine/btree/key_heads.h): routing
// reads a separator only on a head tie. heads[i] is keys[i]'s head; every change keeps them so.
//
// Thread safety: none; the engine's lock guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/btree/key_heads.h"

namespace pmcached::engine::fptree {

class InnerTree {
 public:
  static constexpr std::size_t kFanout = 256;

  // Replaces the tree with `leaves` in key order: (bound, leaf offset).
  void build(const std::vector<std::pair<std::string, std::uint64_t>>& leaves);
  // The leaf whose range holds `key`; 0 when there is no leaf.
  [[nodiscard]] std::uint64_t find(std::string_view key) const noexcept;
  // The leaf before the one find(key) returns; 0 when that one is the first.
  [[nodiscard]] std::uint64_t previous(std::string_view key) const noexcept;
  // A new leaf whose range starts at `bound`, taken from the leaf that held `bound`.
  void insert(std::string bound, std::uint64_t leaf);
  // Removes the leaf find(key) returns; its range goes to a neighbour.
  void erase(std::string_view key);

  [[nodiscard]] std::size_t leaves() const noexcept { return leaves_; }
  // Inner levels above the leaves (0 when there is no leaf).
  [[nodiscard]] std::size_t height() const noexcept { return height_; }
  [[nodiscard]] std::size_t nodes() const noexcept { return nodes_; }
  // What the nodes take in DRAM (their arrays and the separators' heap bytes).
  [[nodiscard]] std::size_t bytes() const noexcept;

 private:
  struct Node {
    bool bottom = true;                           // children are PM leaves
    std::vector<std::string> keys;                // keys[i] is the bound of child i + 1
    btree::KeyPrefix prefix{};                    // shared by every keys[i]
    std::vector<std::uint32_t> heads;             // heads[i]: keys[i]'s head after prefix
    std::vector<std::uint64_t> leaves;            // bottom: the PM leaves
    std::vector<std::unique_ptr<Node>> children;  // otherwise: the nodes below
    [[nodiscard]] std::size_t count() const noexcept {
      return bottom ? leaves.size() : children.size();
    }
  };
  struct Split {
    std::string key;
    std::unique_ptr<Node> right;
  };

  [[nodiscard]] static std::size_t child_index(const Node& n, std::string_view key) noexcept;
  // Recomputes n's prefix and heads from its keys.
  static void refresh_heads(Node& n);
  // keys[i] was just inserted: its head goes in at i (every head moves if the prefix shrinks).
  static void insert_head(Node& n, std::size_t i);
  std::unique_ptr<Split> insert_into(Node& n, std::string bound, std::uint64_t leaf);
  // Removes the child at `i`; returns true when `n` is left without children.
  static bool remove_child(Node& n, std::size_t i);
  bool erase_from(Node& n, std::string_view key);
  static std::size_t bytes_of(const Node& n) noexcept;

  std::unique_ptr<Node> root_;
  std::size_t leaves_ = 0;
  std::size_t height_ = 0;
  std::size_t nodes_ = 0;
};

}  // namespace pmcached::engine::fptree

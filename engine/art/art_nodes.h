// ArtNodes: access to the ART node layouts (art_node.h) for the shared radix algorithms
// (radix_tree.h) and for the engines' writers: finding a child, visiting children in key order,
// collecting a node's entries, filling a freshly allocated node, and the in-place commits of
// seed 002 Algorithms 3–5.
//
// Thread safety: none of its own; the engine's lock orders all access.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "engine/art/art_node.h"
#include "engine/index_engine.h"
#include "engine/pm/pm_region.h"

namespace pmcached::engine::art {

// One child of a node: its partial key (the byte at the branch position) and reference.
struct Entry {
  unsigned chunk;
  std::uint64_t ref;
};

// A node's children in ascending chunk order.
struct Entries {
  std::array<Entry, 256> at;
  unsigned size = 0;

  void push(unsigned chunk, std::uint64_t ref) noexcept { at[size++] = {chunk, ref}; }
  // A copy with `e` added at its ordered place / with `chunk` left out.
  [[nodiscard]] Entries with(Entry e) const noexcept;
  [[nodiscard]] Entries without(unsigned chunk) const noexcept;
};

class ArtNodes {
 public:
  using Key = art::Key;
  using Header = art::Header;

  // `stores_depth`: woart keeps the depth in the header (and may find it ahead of the path after
  // a crash); artcow keeps none and navigates by the path.
  ArtNodes(pm::PmRegion* region, std::function<std::string_view(ItemRef)> key_of, bool stores_depth)
      : region_(region), key_of_(std::move(key_of)), stores_depth_(stores_depth) {}

  // --- the radix_tree.h node-access interface ---
  [[nodiscard]] Header header(std::uint64_t node, std::uint32_t path) const noexcept {
    Header h = Header::unpack(__atomic_load_n(header_word(node), __ATOMIC_RELAXED));
    if (!stores_depth_) h.depth = path;
    return h;
  }
  [[nodiscard]] std::uint64_t* header_word(std::uint64_t node) const noexcept {
    return &base(node)->header;
  }
  [[nodiscard]] std::uint64_t* end_slot(std::uint64_t node) const noexcept {
    return &base(node)->end_slot;
  }
  [[nodiscard]] std::uint64_t* child_slot(std::uint64_t node, unsigned chunk) const noexcept;
  template <typename F>
  bool for_each_child(std::uint64_t node, unsigned first, F&& f) const;
  [[nodiscard]] std::string_view leaf_key(std::uint64_t leaf) const {
    return key_of_(radix::leaf_item(leaf));
  }
  [[nodiscard]] std::string node_problem(std::uint64_t node) const;
  [[nodiscard]] std::uint64_t node_bytes(std::uint64_t node) const noexcept {
    return type_info(type(node)).bytes;
  }
  void commit(std::uint64_t* word, std::uint64_t value) const noexcept {
    region_->store_u64_persist(word, value);
  }

  // --- for RadixEngine (stats, recovery) ---
  [[nodiscard]] bool stores_depth() const noexcept { return stores_depth_; }
  static constexpr std::array<const char*, 4> kTypeNames{"n4", "n16", "n48", "n256"};
  [[nodiscard]] unsigned type_index(std::uint64_t node) const noexcept {
    return static_cast<unsigned>(type(node)) - 1;
  }

  // --- for the writers ---
  [[nodiscard]] NodeBase* base(std::uint64_t node) const noexcept {
    return region_->at<NodeBase>(node);
  }
  template <typename T>
  [[nodiscard]] T* as(std::uint64_t node) const noexcept {
    return region_->at<T>(node);
  }
  [[nodiscard]] NodeType type(std::uint64_t node) const noexcept {
    return static_cast<NodeType>(base(node)->type & 0xFF);
  }
  [[nodiscard]] unsigned child_count(std::uint64_t node) const noexcept;
  [[nodiscard]] Entries entries(std::uint64_t node) const;

  // Writes a complete node of `type` into the block at `node` (zeroing it first): header `h`
  // (without the depth for artcow), END slot `end`, `children` (ordered, within the capacity).
  // Nothing is flushed.
  void fill(std::uint64_t node, NodeType type, Header h, std::uint64_t end,
            const Entries& children) const noexcept;

  // In-place commits (seed 002 §3.5): each writes what the new entry needs, persists it, then
  // commits with ONE atomic store that is persisted. add_in_place requires room for the entry.
  void add_in_place(std::uint64_t node, unsigned chunk, std::uint64_t ref) const noexcept;
  void remove_in_place(std::uint64_t node, unsigned chunk) const noexcept;

 private:
  pm::PmRegion* region_;
  std::function<std::string_view(ItemRef)> key_of_;
  bool stores_depth_;
};

template <typename F>
bool ArtNodes::for_each_child(std::uint64_t node, unsigned first, F&& f) const {
  switch (type(node)) {
    case NodeType::kN4: {
      Node4* n = as<Node4>(node);
      const std::uint64_t word = __atomic_load_n(&n->keys_slots, __ATOMIC_RELAXED);
      for (unsigned j = 0; j < 4 && n4_slot(word, j) != 0; ++j) {
        if (n4_key(word, j) >= first && !f(n4_key(word, j), &n->children[n4_slot(word, j) - 1])) {
          return false;
        }
      }
      return true;
    }
    case NodeType::kN16: {
      // Entries are unsorted (woart): order the valid ones by key first.
      Node16* n = as<Node16>(node);
      std::uint32_t bits = static_cast<std::uint32_t>(n->bitmap & 0xFFFF);
      unsigned order[16];
      unsigned count = 0;
      for (; bits != 0; bits &= bits - 1) {
        const unsigned i = static_cast<unsigned>(__builtin_ctz(bits));
        unsigned pos = count++;
        for (; pos > 0 && n->keys[order[pos - 1]] > n->keys[i]; --pos) order[pos] = order[pos - 1];
        order[pos] = i;
      }
      for (unsigned k = 0; k < count; ++k) {
        const unsigned i = order[k];
        if (n->keys[i] >= first && !f(n->keys[i], &n->children[i])) return false;
      }
      return true;
    }
    case NodeType::kN48: {
      Node48* n = as<Node48>(node);
      for (unsigned b = first; b < 256; ++b) {
        if (n->index[b] != 0 && !f(b, &n->children[n->index[b] - 1])) return false;
      }
      return true;
    }
    case NodeType::kN256: {
      Node256* n = as<Node256>(node);
      for (unsigned b = first; b < 256; ++b) {
        if (n->children[b] != 0 && !f(b, &n->children[b])) return false;
      }
      return true;
    }
  }
  return true;
}

}  // namespace pmcached::engine::art

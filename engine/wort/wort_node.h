// WORT node layout (persistent, layout version 1) and its node-access type for the shared radix
// algorithms (engine/radix/radix_tree.h).
//
// Node, 144 bytes, one allocator block, all fields aligned 8-byte words:
//   +0    u64 header        radix::PathHeader<4>: depth, prefix length and up to 8 stored prefix
//                           nibbles, one failure-atomic word (seed 002 §3.4)
//   +8    u64 children[16]  child for nibble value 0..15 at position depth + prefix_len
//   +136  u64 end_slot      the leaf whose key ends exactly at nibble depth + prefix_len
// References are as in radix_key.h. Keys are read as nibbles (radix::Chunks<4>). No operation
// ever changes a node's branch (depth + prefix_len).
// Layout history: docs/LAYOUTS.md.
//
// Thread safety: plain data; the engine's lock orders all access.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "engine/index_engine.h"
#include "engine/pm/pm_region.h"
#include "engine/radix/radix_key.h"

namespace pmcached::engine::wort {

inline constexpr std::uint32_t kNodeLayoutVersion = 1;
inline constexpr unsigned kFanout = 16;

using Key = radix::Chunks<4>;
using Header = radix::PathHeader<4>;
using radix::is_leaf;
using radix::leaf_item;
using radix::leaf_ref;

struct Node {
  std::uint64_t header;
  std::uint64_t children[kFanout];
  std::uint64_t end_slot;
};
static_assert(sizeof(Node) == 144, "WORT node layout v1 is 144 bytes");

// The node-access type the shared radix algorithms run over (see radix_tree.h).
class WortNodes {
 public:
  using Key = wort::Key;
  using Header = wort::Header;

  WortNodes(pm::PmRegion* region, std::function<std::string_view(ItemRef)> key_of)
      : region_(region), key_of_(std::move(key_of)) {}

  [[nodiscard]] Node* node(std::uint64_t offset) const noexcept {
    return region_->at<Node>(offset);
  }
  // WORT navigates by the stored depth (a crash may leave it ahead of the path).
  [[nodiscard]] Header header(std::uint64_t offset, std::uint32_t /*path*/) const noexcept {
    return Header::unpack(__atomic_load_n(&node(offset)->header, __ATOMIC_RELAXED));
  }
  [[nodiscard]] std::uint64_t* header_word(std::uint64_t offset) const noexcept {
    return &node(offset)->header;
  }
  [[nodiscard]] std::uint64_t* end_slot(std::uint64_t offset) const noexcept {
    return &node(offset)->end_slot;
  }
  [[nodiscard]] std::uint64_t* child_slot(std::uint64_t offset, unsigned chunk) const noexcept {
    return &node(offset)->children[chunk];
  }
  template <typename F>
  bool for_each_child(std::uint64_t offset, unsigned first, F&& f) const {
    Node* n = node(offset);
    for (unsigned i = first; i < kFanout; ++i) {
      if (n->children[i] != 0 && !f(i, &n->children[i])) return false;
    }
    return true;
  }
  [[nodiscard]] std::string_view leaf_key(std::uint64_t leaf) const {
    return key_of_(leaf_item(leaf));
  }
  [[nodiscard]] std::string node_problem(std::uint64_t /*offset*/) const { return {}; }
  [[nodiscard]] std::uint64_t node_bytes(std::uint64_t /*offset*/) const { return sizeof(Node); }
  void commit(std::uint64_t* word, std::uint64_t value) const noexcept {
    region_->store_u64_persist(word, value);
  }
  [[nodiscard]] pm::PmRegion& region() const noexcept { return *region_; }
  // For RadixEngine: WORT always stores the depth and has one node type.
  [[nodiscard]] static constexpr bool stores_depth() noexcept { return true; }
  static constexpr std::array<const char*, 0> kTypeNames{};
  [[nodiscard]] static unsigned type_index(std::uint64_t /*offset*/) noexcept { return 0; }

 private:
  pm::PmRegion* region_;
  std::function<std::string_view(ItemRef)> key_of_;
};

}  // namespace pmcached::engine::wort

// The read-side and recovery algorithms shared by the radix engines (wort, woart, artcow), written
// once over a node-access type `Tree` that each engine provides:
//
//   using Key = radix::Chunks<kBits>;  using Header = radix::PathHeader<kBits>;
//   Header header(std::uint64_t node, std::uint32_t path_depth) const;
//       the node's header with the depth the engine navigates by: the stored depth (wort, woart,
//       where a crash may leave it ahead of the path) or `path_depth` (artcow stores none)
//   std::uint64_t* header_word(std::uint64_t node) const;
//   std::uint64_t* end_slot(std::uint64_t node) const;
//   std::uint64_t* child_slot(std::uint64_t node, unsigned chunk) const;   // nullptr: no child
//   bool for_each_child(std::uint64_t node, unsigned first, F f) const;
//       f(unsigned chunk, std::uint64_t* slot) for the children with chunk >= first in ascending
//       order until f returns false (then returns false)
//   std::string_view leaf_key(std::uint64_t leaf) const;
//   std::string node_problem(std::uint64_t node) const;   // "" or why the node is malformed
//   std::uint64_t node_bytes(std::uint64_t node) const;   // layout size (valid type assumed)
//   void commit(std::uint64_t* word, std::uint64_t value) const;  // one 8-byte store + persist
//
// References are as in radix_key.h. Thread safety: the caller holds the engine's lock (shared for
// the readers, exclusive for repair_depths).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "engine/pm/pool.h"
#include "engine/radix/radix_key.h"

namespace pmcached::engine::radix {

// The key of some leaf below `ref` (a leaf or a node); "" for an empty reference.
template <typename Tree>
[[nodiscard]] std::string_view any_leaf_key(const Tree& t, std::uint64_t ref) {
  while (ref != 0 && !is_leaf(ref)) {
    std::uint64_t next = *t.end_slot(ref);
    if (next == 0) {
      t.for_each_child(ref, 0, [&](unsigned, std::uint64_t* slot) {
        next = *slot;
        return false;
      });
    }
    ref = next;
  }
  return ref == 0 ? std::string_view() : t.leaf_key(ref);
}

// The slot in `node` (navigated header `h`) where `key` belongs: the END slot if the key ends at
// the branch, else the child slot for its branch chunk (nullptr when there is none).
template <typename Tree, typename Header>
[[nodiscard]] std::uint64_t* slot_for_key(const Tree& t, std::uint64_t node, const Header& h,
                                          std::string_view key) {
  const std::size_t chunks = Tree::Key::count(key);
  if (chunks == h.branch()) return t.end_slot(node);
  return t.child_slot(node, Tree::Key::at(key, h.branch()));
}

// One step of the descent for `key`: the reference in node `node` that `key` leads to, or 0 when
// the node's stored prefix or branch position rules the key out. `path` (the chunks consumed
// above the node) moves past the node's branch.
template <typename Tree>
[[nodiscard]] std::uint64_t step_toward(const Tree& t, std::uint64_t node, std::uint32_t& path,
                                        std::string_view key) {
  const auto h = t.header(node, path);
  if (Tree::Key::count(key) < h.branch() || !h.stored_prefix_matches(key)) return 0;
  const std::uint64_t* slot = slot_for_key(t, node, h, key);
  path = h.branch() + 1;
  return slot == nullptr ? 0 : *slot;
}

// The leaf reference stored for `key`, or 0. Readers trust only the stored prefix chunks and the
// absolute branch position; skipped chunks are checked by the full key compare at the leaf.
// `reached` is called with each reference the descent moves to (a node, or the leaf), before it
// is read.
template <typename Tree, typename Reached = void (*)(std::uint64_t)>
[[nodiscard]] std::uint64_t find_leaf(
    const Tree& t, std::uint64_t root, std::string_view key,
    Reached reached = [](std::uint64_t) {}) {
  std::uint64_t ref = root;
  std::uint32_t path = 0;
  while (ref != 0 && !is_leaf(ref)) {
    ref = step_toward(t, ref, path, key);
    if (ref != 0) reached(ref);
  }
  return ref != 0 && t.leaf_key(ref) == key ? ref : 0;
}

// The first prefix chunk (index j < prefix_len) of the node `node` (navigated header `h`) where
// `key` differs or ends, checked pessimistically: chunks past the stored ones come from a leaf.
// h.prefix_len when the whole prefix matches.
template <typename Tree, typename Header>
[[nodiscard]] std::uint32_t prefix_mismatch(const Tree& t, std::uint64_t node, const Header& h,
                                            std::string_view key) {
  using Key = typename Tree::Key;
  const std::size_t chunks = Key::count(key);
  std::string_view sample;
  for (std::uint32_t j = 0; j < h.prefix_len; ++j) {
    const std::size_t pos = h.depth + j;
    unsigned expected;
    if (j < Header::kStored) {
      expected = h.chunk(j);
    } else {
      if (sample.empty()) sample = any_leaf_key(t, node);
      expected = Key::at(sample, pos);
    }
    if (pos >= chunks || Key::at(key, pos) != expected) return j;
  }
  return h.prefix_len;
}

// In-order visit of the subtree at `ref`, whose path so far covers chunks [0, implied).
// `bounded`: that path equals `from`'s first `implied` chunks, so keys below may be < from.
// Returns false when `visit` asked to stop.
template <typename Tree, typename Visit>
bool scan_from(const Tree& t, std::uint64_t ref, std::uint32_t implied, bool bounded,
               std::string_view from, const Visit& visit) {
  using Key = typename Tree::Key;
  if (is_leaf(ref)) {
    const std::string_view key = t.leaf_key(ref);
    if (bounded && key < from) return true;
    return visit(key, leaf_item(ref));
  }
  const std::uint32_t branch = t.header(ref, implied).branch();
  const std::size_t from_chunks = Key::count(from);
  if (bounded && implied < branch) {
    // Compare the compressed part with `from`, using a leaf for the real chunks.
    const std::string_view sample = any_leaf_key(t, ref);
    if (Key::count(sample) < branch) return true;  // unreachable in a valid tree
    for (std::uint32_t pos = implied; pos < branch && bounded; ++pos) {
      if (pos >= from_chunks) {
        bounded = false;  // `from` is a prefix of every key below
        break;
      }
      const unsigned a = Key::at(sample, pos);
      const unsigned f = Key::at(from, pos);
      if (a < f) return true;  // the whole subtree is < from
      if (a > f) bounded = false;
    }
  }
  if (bounded && from_chunks == branch) bounded = false;  // the END key equals `from`
  // Still bounded: from is longer than the END key, which is therefore < from.
  const std::uint64_t end = *t.end_slot(ref);
  if (end != 0 && !bounded) {
    if (!scan_from(t, end, branch, false, from, visit)) return false;
  }
  const unsigned first = bounded ? Key::at(from, branch) : 0;
  return t.for_each_child(ref, first, [&](unsigned chunk, std::uint64_t* slot) {
    return scan_from(t, *slot, branch + 1, bounded && chunk == first, from, visit);
  });
}

struct WalkTotals {
  std::uint64_t nodes = 0;
  std::uint64_t leaves = 0;
  std::uint64_t leaf_depth_sum = 0;  // nodes on the path to each leaf, summed
};

// Visits every node (`visit_node(offset)`, parents first) and counts nodes, leaves and depths.
template <typename Tree, typename VisitNode>
void walk(const Tree& t, std::uint64_t ref, std::uint64_t path_nodes, WalkTotals& totals,
          const VisitNode& visit_node) {
  if (ref == 0) return;
  if (is_leaf(ref)) {
    ++totals.leaves;
    totals.leaf_depth_sum += path_nodes;
    return;
  }
  ++totals.nodes;
  visit_node(ref);
  walk(t, *t.end_slot(ref), path_nodes + 1, totals, visit_node);
  t.for_each_child(ref, 0, [&](unsigned, std::uint64_t* slot) {
    walk(t, *slot, path_nodes + 1, totals, visit_node);
    return true;
  });
}

// Before anything trusts a tree read from a pool: every node reference lies inside the heap, is
// aligned, names a well-formed node, is reached once (no cycles, no sharing), END slots hold
// leaves, and paths are no deeper than the longest key allows. Throws std::runtime_error.
template <typename Tree>
void validate_structure(const Tree& t, std::uint64_t root, std::uint64_t region_size) {
  constexpr std::size_t kMaxPathNodes = Tree::Key::kPerByte * 250 + 2;  // one node per chunk
  std::unordered_set<std::uint64_t> seen;
  std::vector<std::pair<std::uint64_t, std::size_t>> stack;  // (node offset, nodes above it)
  if (root != 0) stack.emplace_back(root, 0);
  auto fail = [](std::uint64_t offset, const std::string& why) {
    throw std::runtime_error("index node at pool offset " + std::to_string(offset) + " " + why);
  };
  while (!stack.empty()) {
    const auto [offset, above] = stack.back();
    stack.pop_back();
    if (offset < pm::kSuperblockSize || offset % 16 != 0 || offset > region_size - 64) {
      fail(offset, "is outside the heap or misaligned");
    }
    if (const std::string problem = t.node_problem(offset); !problem.empty()) fail(offset, problem);
    if (offset + t.node_bytes(offset) > region_size) fail(offset, "runs past the pool's end");
    if (!seen.insert(offset).second) fail(offset, "is referenced twice");
    if (above >= kMaxPathNodes) throw std::runtime_error("index path is deeper than any key");
    if (const std::uint64_t end = *t.end_slot(offset); end != 0 && !is_leaf(end)) {
      fail(offset, "has a node in its end slot");
    }
    // for_each_child visits the entries a node says are used; none may be empty (the engines
    // clear the key word, bitmap bit or index byte, never only the reference).
    t.for_each_child(offset, 0, [&](unsigned, std::uint64_t* slot) {
      if (*slot == 0) fail(offset, "has a used entry without a reference");
      if (!is_leaf(*slot)) stack.emplace_back(*slot, above + 1);
      return true;
    });
  }
}

// A key that leads to the leaf of item `item` below `node` (at path depth `depth`) without
// reading that leaf's key, which may be damaged: the chunks before the branch of the leaf's node
// come from another reference of that node (every leaf below a node shares them), then the leaf's
// own chunk. False if the item is not below `node`, or its node has no other reference.
template <typename Tree>
bool route_to(const Tree& t, std::uint64_t node, std::uint32_t depth, std::uint64_t item,
              std::string& route) {
  using Key = typename Tree::Key;
  const std::uint32_t branch = t.header(node, depth).branch();
  std::vector<std::pair<unsigned, std::uint64_t>> refs;  // (chunk, reference); the end slot first
  if (const std::uint64_t end = *t.end_slot(node); end != 0) refs.emplace_back(Key::kFanout, end);
  t.for_each_child(node, 0, [&](unsigned chunk, std::uint64_t* slot) {
    refs.emplace_back(chunk, *slot);
    return true;
  });
  for (std::size_t i = 0; i < refs.size(); ++i) {
    const auto [chunk, ref] = refs[i];
    if (!is_leaf(ref)) {
      if (route_to(t, ref, branch + 1, item, route)) return true;
      continue;
    }
    if (leaf_item(ref) != item || refs.size() < 2) continue;
    const std::string_view other = any_leaf_key(t, refs[i == 0 ? 1 : 0].second);
    const bool at_end = chunk == Key::kFanout;
    const std::size_t bytes = (branch + (at_end ? 0 : 1) + Key::kPerByte - 1) / Key::kPerByte;
    route.assign(other.substr(0, std::min(bytes, other.size())));
    route.resize(bytes, '\0');
    if (!at_end) {
      auto byte = static_cast<unsigned char>(route[branch / Key::kPerByte]);
      if constexpr (Key::kPerByte == 1) {
        byte = static_cast<unsigned char>(chunk);
      } else {
        byte = branch % 2 == 0 ? static_cast<unsigned char>((byte & 0x0Fu) | (chunk << 4))
                               : static_cast<unsigned char>((byte & 0xF0u) | chunk);
      }
      route[branch / Key::kPerByte] = static_cast<char>(byte);
    }
    return true;
  }
  return false;
}

// Algorithm 2 (RecoverHeader): the header a node must have at path depth `depth`, its prefix
// recomputed as the largest common prefix of two leaves from different references.
template <typename Tree>
[[nodiscard]] typename Tree::Header common_header(const Tree& t, std::uint64_t node,
                                                  std::uint32_t depth) {
  using Header = typename Tree::Header;
  if (depth == 0) return Header{};  // the root: depth 0, never a prefix
  std::uint64_t first = *t.end_slot(node);
  std::uint64_t second = 0;
  t.for_each_child(node, 0, [&](unsigned, std::uint64_t* slot) {
    (first == 0 ? first : second) = *slot;
    return second == 0;
  });
  if (first == 0) return Header{depth, 0, 0};
  const std::string_view k1 = any_leaf_key(t, first);
  if (second != 0) {
    const std::string_view k2 = any_leaf_key(t, second);
    return Header::from_key(depth, Tree::Key::common(k1, k2, depth), k1);
  }
  // One reference only (no operation leaves this): keep the node's absolute branch.
  const std::uint32_t branch = t.header(node, depth).branch();
  return Header::from_key(depth, branch > depth ? branch - depth : 0, k1);
}

// The navigated header of `node` at path depth `path`. A stored depth that differs (left by a
// crash; recover() normally repaired it already) is first repaired with Algorithm 2, so a writer
// never builds on it. Engines without a stored depth never differ.
template <typename Tree>
[[nodiscard]] typename Tree::Header checked_header(const Tree& t, std::uint64_t node,
                                                   std::uint32_t path) {
  typename Tree::Header h = t.header(node, path);
  if (h.depth != path) {
    t.commit(t.header_word(node), common_header(t, node, path).pack());
    h = t.header(node, path);
  }
  return h;
}

// Replaces the node in `parent_slot` (path depth `depth`) by its only other reference `other`
// with one committed store; a node moved up gets its widened header in a second store. A crash
// between the two leaves that node's depth ahead of its path, which Algorithm 2 repairs.
template <typename Tree>
void collapse_in_place(const Tree& t, std::uint64_t* parent_slot, std::uint32_t depth,
                       std::uint64_t other) {
  using Header = typename Tree::Header;
  if (other == 0 || is_leaf(other)) {
    t.commit(parent_slot, other);
    return;
  }
  const std::uint32_t branch = t.header(other, depth).branch();
  const Header merged = Header::from_key(depth, branch - depth, any_leaf_key(t, other));
  t.commit(parent_slot, other);
  t.commit(t.header_word(other), merged.pack());
}

// Recovery for the engines that keep a depth in the header (wort, woart): visits every node once,
// children first, with the depth its path implies; a node whose stored depth differs gets its
// header recomputed (Algorithm 2); a non-root node left with < 2 references (never left by these
// engines, but not trusted either) is collapsed. Blocks unlinked here are freed by the
// allocator's rebuild, which follows recovery.
template <typename Tree>
void repair_depths(const Tree& t, std::uint64_t* slot, std::uint32_t depth, bool is_root) {
  const std::uint64_t node = *slot;
  const std::uint32_t branch = t.header(node, depth).branch();
  unsigned refs = *t.end_slot(node) != 0 ? 1 : 0;
  std::uint64_t only = *t.end_slot(node);
  t.for_each_child(node, 0, [&](unsigned, std::uint64_t* child) {
    if (!is_leaf(*child)) repair_depths(t, child, branch + 1, false);
    ++refs;
    only = *child;
    return true;
  });
  if (!is_root && refs < 2) {
    collapse_in_place(t, slot, depth, only);
    return;
  }
  const std::uint64_t stored = *t.header_word(node);
  if (Tree::Header::unpack(stored).depth != depth || (is_root && stored != 0)) {
    const std::uint64_t expected = common_header(t, node, depth).pack();  // the root: 0
    if (expected != stored) t.commit(t.header_word(node), expected);
  }
}

}  // namespace pmcached::engine::radix

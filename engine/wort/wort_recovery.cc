// WortEngine: recovery (seed 002 Algorithm 2, RecoverHeader) and whole-tree walks.
//
// recover() visits every node once, children before parents, with the depth its path implies.
// A node whose header depth differs gets its header recomputed from two leaves of different
// children (Algorithm 2) and written with one 8-byte store + persist. No operation of this
// engine leaves a non-root node with fewer than two references, even across a crash, but
// recover() would collapse one (same order as erase) rather than trust it.
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "engine/pm/persistence.h"
#include "engine/pm/pool.h"
#include "engine/wort/wort_engine.h"
#include "engine/wort/wort_tree.h"

namespace pmcached::engine::wort {

Header WortEngine::expected_header(std::uint64_t offset, std::uint32_t depth) const {
  if (depth == 0) return Header{};  // the root: depth 0, never a prefix
  const Node* n = node(offset);
  std::uint64_t first = n->end_slot;
  std::uint64_t second = 0;
  for (std::uint64_t child : n->children) {
    if (child == 0) continue;
    if (first == 0) {
      first = child;
    } else if (second == 0) {
      second = child;
    }
  }
  if (first == 0) return Header{depth, 0, 0};
  const std::string_view k1 = any_leaf_key(first);
  if (second != 0) {  // Algorithm 2: the largest common prefix of two leaves, from `depth`
    const std::string_view k2 = any_leaf_key(second);
    return header_from_key(depth, common_nibbles(k1, k2, depth), k1);
  }
  // One reference only (never left by this engine): keep the node's absolute branch.
  const std::uint32_t branch = header_of(n).branch();
  return header_from_key(depth, branch > depth ? branch - depth : 0, k1);
}

void WortEngine::repair_header(std::uint64_t offset, std::uint32_t depth) noexcept {
  Node* n = node(offset);
  const std::uint64_t word = expected_header(offset, depth).pack();
  if (word != __atomic_load_n(&n->header, __ATOMIC_RELAXED)) {
    region_->store_u64_persist(&n->header, word);
  }
}

// Before anything trusts the tree: every node reference must lie inside the heap, be
// aligned, be reached once (no cycles, no sharing), and paths must be no deeper than the
// longest key allows. A pool that fails this is corrupt; recover() refuses it with an error
// instead of following a wild reference.
void WortEngine::validate_structure() const {
  constexpr std::size_t kMaxPathNodes = 2 * 250 + 2;  // one node per nibble at most
  const std::uint64_t size = region_->size();
  std::unordered_set<std::uint64_t> seen;
  std::vector<std::pair<std::uint64_t, std::size_t>> stack;  // (node offset, nodes above it)
  stack.emplace_back(root(), 0);
  while (!stack.empty()) {
    const auto [offset, above] = stack.back();
    stack.pop_back();
    if (offset < pm::kSuperblockSize || offset % 16 != 0 || offset > size - sizeof(Node)) {
      throw std::runtime_error("index node reference " + std::to_string(offset) +
                               " is outside the heap or misaligned");
    }
    if (!seen.insert(offset).second) {
      throw std::runtime_error("index node at pool offset " + std::to_string(offset) +
                               " is referenced twice");
    }
    if (above >= kMaxPathNodes) throw std::runtime_error("index path is deeper than any key");
    const Node* n = node(offset);
    for (std::uint64_t child : n->children) {
      if (child != 0 && !is_leaf(child)) stack.emplace_back(child, above + 1);
    }
    if (n->end_slot != 0 && !is_leaf(n->end_slot)) {
      throw std::runtime_error("index node at pool offset " + std::to_string(offset) +
                               " has a node in its end slot");
    }
  }
}

void WortEngine::recover() {
  pm::OpScope scope(pm::OpKind::kRecovery);
  std::unique_lock lock(mutex_);
  if (root() != 0) validate_structure();
  if (root() != 0) {
    recover_node(root_field_, 0, /*is_root=*/true);
    const Node* r = node(root());
    bool empty = r->end_slot == 0;
    for (std::uint64_t child : r->children) empty = empty && child == 0;
    if (empty) region_->store_u64_persist(root_field_, 0);  // unreachable nodes are free
  }
  recount();
}

// Post-order: the children of the node in `slot` first (their path depth is this node's
// absolute branch + 1, which no crash changes), then the node itself.
void WortEngine::recover_node(std::uint64_t* slot, std::uint32_t depth, bool is_root) {
  const std::uint64_t offset = *slot;
  Node* n = node(offset);
  const std::uint32_t branch = header_of(n).branch();
  for (std::uint64_t& child : n->children) {
    if (child != 0 && !is_leaf(child)) recover_node(&child, branch + 1, false);
  }
  unsigned refs = 0;
  std::uint64_t only = 0;
  for (std::uint64_t ref : n->children) {
    if (ref != 0) ++refs, only = ref;
  }
  if (n->end_slot != 0) ++refs, only = n->end_slot;
  if (!is_root && refs < 2) {  // collapse (defensive; see the file comment)
    if (only != 0 && !is_leaf(only)) {
      Node* c = node(only);
      const Header merged =
          header_from_key(depth, header_of(c).branch() - depth, any_leaf_key(only));
      region_->store_u64_persist(slot, only);
      region_->store_u64_persist(&c->header, merged.pack());
    } else {
      region_->store_u64_persist(slot, only);
    }
    return;
  }
  if (header_of(n).depth != depth || (is_root && n->header != 0)) repair_header(offset, depth);
}

void WortEngine::walk(std::uint64_t ref, std::uint64_t path_nodes, WalkTotals& totals,
                      const std::function<void(std::uint64_t)>* visit_node) const {
  if (is_leaf(ref)) {
    ++totals.leaves;
    totals.leaf_depth_sum += path_nodes;
    return;
  }
  ++totals.nodes;
  if (visit_node != nullptr) (*visit_node)(ref);
  const Node* n = node(ref);
  if (n->end_slot != 0) walk(n->end_slot, path_nodes + 1, totals, visit_node);
  for (std::uint64_t child : n->children) {
    if (child != 0) walk(child, path_nodes + 1, totals, visit_node);
  }
}

void WortEngine::recount() {
  WalkTotals totals;
  if (root() != 0) walk(root(), 0, totals, nullptr);
  keys_.store(totals.leaves, std::memory_order_relaxed);
}

void WortEngine::for_each_block(const std::function<void(std::uint64_t offset)>& visit) const {
  std::shared_lock lock(mutex_);
  WalkTotals totals;
  if (root() != 0) walk(root(), 0, totals, &visit);
}

}  // namespace pmcached::engine::wort

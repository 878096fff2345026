// WbTreeEngine::recover: validation, split-log replay and repair after a crash (or on any start).
//
// Order: (1) a committed split log (log[0] != 0) is replayed: the blocks it names are validated, N,
// S and P get a valid order[] (re-sorted from the bitmap unless it is valid, wbtree_node.h), the
// link is done unless it is there (root split: meta.root = R; else (K, S) is inserted into P after
// N unless P already has child S), N is truncated to the keys < K (by key comparison, so a
// truncation done already is a no-op), and the log is cleared; a log with only stale log[1..] words
// is cleared.
// (2) The tree is walked from meta.root: every node and key block is validated before anything
// follows it (a node reached twice, a wrong kind or count, leaves at different depths, a leaf entry
// whose reference is outside the heap or with a bit set past its tag: "pool is corrupt"), each node
// whose slot array is not valid gets order[] rebuilt, an inner node's keyed first entry loses its
// key block, and every inner node's key heads are recomputed (derived data, never flushed). Leaf
// tags are not checked against their keys here (that would read every item, and a mismatch is
// what a torn or corrupt ITEM looks like, which the store's checksum check after recovery drops
// item by item instead of refusing the pool; the inspector checks every tag).
// (3) A one-child inner root is collapsed. Each step is idempotent and ends in a persisted store,
// so a crash inside recovery is recovered by the next start. Recovery neither allocates nor
// frees: what it unlinks, the allocator rebuild finds unreachable.
#include <iterator>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_set>

#include "engine/pm/persistence.h"
#include "engine/wbtree/wbtree_engine.h"

namespace pmcached::engine::wbtree {
namespace {

[[noreturn]] void corrupt(const std::string& what, std::uint64_t offset, const char* why) {
  throw std::runtime_error("pool is corrupt: wbtree " + what + " at pool offset " +
                           std::to_string(offset) + " " + why);
}

}  // namespace

void WbTreeEngine::check_key_block(std::uint64_t key_block) const {
  if (!in_heap(key_block, 1) || !in_heap(key_block, 1u + *at<unsigned char>(key_block))) {
    corrupt("key block", key_block, "is outside the heap or misaligned");
  }
}

bool WbTreeEngine::check_node(std::uint64_t node, const char* what) const {
  if (node == 0 || !in_heap(node, sizeof(NodeHeader))) {
    corrupt(what, node, "is outside the heap or misaligned");
  }
  const NodeHeader* h = header(node);
  if (h->kind != kLeafKind && h->kind != kInnerKind) corrupt(what, node, "has no node kind");
  if (!in_heap(node, node_size_of(h->kind))) corrupt(what, node, "runs past the heap");
  const std::uint64_t entries = h->bitmap & entry_mask(h->kind);
  if ((h->bitmap & ~(entry_mask(h->kind) | kValidBit)) != 0) {
    corrupt(what, node, "has bitmap bits past its entries");
  }
  if (h->count > fanout_of(h->kind)) corrupt(what, node, "has a count past its fan-out");
  // A slot array that does not list the bitmap's entries is what a crashed insert leaves
  // (wbtree_node.h): the caller re-sorts it, as it does one with bit 0 clear.
  const bool valid = slot_array_valid(*h);
  unsigned keyless = 0;
  for (unsigned e = 0; e < fanout_of(h->kind); ++e) {
    if ((entries & entry_bit(e)) == 0) continue;
    if (h->kind == kLeafKind) {
      const std::uint64_t word = leaf(node)->entries[e];
      if ((word & ~(btree::kRefMask | btree::kTagMask)) != 0) {
        corrupt(what, node, "has a leaf entry with bits past its tag");
      }
      if (!in_heap(btree::ref_of(word), 1)) {
        corrupt(what, node, "has a leaf entry that refers outside the heap");
      }
      continue;
    }
    const InnerEntry& entry = inner(node)->entries[e];
    if (entry.child == 0) corrupt(what, node, "has an inner entry without a child");
    if (entry.key_block == 0) {
      ++keyless;
      if (valid && h->order[0] != e) {
        corrupt(what, node, "has a keyless entry that is not its first");
      }
    } else {
      check_key_block(entry.key_block);
    }
  }
  if (keyless > 1) corrupt(what, node, "has two keyless entries");
  return valid;
}

void WbTreeEngine::ensure_order(std::uint64_t node) {
  if (!check_node(node, "node")) rebuild_order(node);
}

void WbTreeEngine::recover() {
  pm::OpScope scope(pm::OpKind::kRecovery);
  std::unique_lock lock(mutex_);
  Meta* m = meta();
  if (m == nullptr) {
    keys_.store(0, std::memory_order_relaxed);
    return;
  }
  if (m->log[kLogNode] != 0) {
    replay_log(m);
    log_replays_.fetch_add(1, std::memory_order_relaxed);
  } else {
    for (unsigned i = 1; i < std::size(m->log); ++i) {
      if (m->log[i] != 0) {
        clear_log(m);
        m->log[5] = 0;
        region_->persist(&m->log[5], sizeof m->log[5]);
        break;
      }
    }
  }
  std::size_t keys = 0;
  if (m->root != 0) {
    keys = repair_walk();
    collapse_root(/*free=*/false);
  }
  keys_.store(keys, std::memory_order_relaxed);
}

void WbTreeEngine::replay_log(Meta* m) {
  const std::uint64_t node = m->log[kLogNode];
  const std::uint64_t sibling = m->log[kLogSibling];
  const std::uint64_t key_block = m->log[kLogKey];
  const std::uint64_t parent = m->log[kLogParent];
  const std::uint64_t new_root = m->log[kLogRoot];
  check_node(node, "split node");
  check_node(sibling, "split sibling");
  if (header(sibling)->kind != header(node)->kind) {
    corrupt("split sibling", sibling, "is not of its node's kind");
  }
  if (key_block == 0) corrupt("split log", pool_->root(), "has no separator key");
  check_key_block(key_block);
  const std::uint64_t above = parent == 0 ? new_root : parent;
  check_node(above, parent == 0 ? "new root" : "split parent");
  if (header(above)->kind != kInnerKind) corrupt("split parent", above, "is not an inner node");
  ensure_order(node);
  ensure_order(sibling);
  ensure_order(above);

  if (parent == 0) {
    if (m->root != new_root) {
      if (m->root != node) corrupt("split node", node, "was the root but is not any more");
      region_->store_u64_persist(&m->root, new_root);
    }
  } else {
    const NodeHeader* p = header(parent);
    unsigned node_pos = p->count, sibling_pos = p->count;
    for (unsigned pos = 0; pos < p->count; ++pos) {
      if (child_at(parent, pos) == node) node_pos = pos;
      if (child_at(parent, pos) == sibling) sibling_pos = pos;
    }
    if (sibling_pos == p->count) {
      if (node_pos == p->count) corrupt("split parent", parent, "does not hold the split node");
      if (full(parent)) corrupt("split parent", parent, "is full");
      insert_entry(parent, node_pos + 1, key_block, sibling);
    }
  }
  truncate_below(node, block_key(key_block));
  clear_log(m);
}

std::size_t WbTreeEngine::repair_walk() {
  std::unordered_set<std::uint64_t> seen;
  std::vector<std::pair<std::uint64_t, std::size_t>> stack = {{meta()->root, 1}};
  std::size_t leaf_depth = 0, keys = 0;
  while (!stack.empty()) {
    const auto [node, depth] = stack.back();
    stack.pop_back();
    const bool valid = check_node(node, "node");
    if (!seen.insert(node).second) corrupt("node", node, "is reached twice");
    if (!valid) rebuild_order(node);
    const NodeHeader* h = header(node);
    if (h->kind == kLeafKind) {
      if (leaf_depth == 0) leaf_depth = depth;
      if (depth != leaf_depth) corrupt("leaf", node, "is not at the depth of the other leaves");
      keys += h->count;
      continue;
    }
    if (h->count == 0) corrupt("inner node", node, "has no entry");
    for (unsigned pos = 0; pos < h->count; ++pos) {
      const std::uint64_t key_block = inner(node)->entries[h->order[pos]].key_block;
      if (key_block != 0 && !seen.insert(key_block).second) {
        corrupt("key block", key_block, "is reached twice");
      }
      stack.emplace_back(child_at(node, pos), depth + 1);
    }
    (void)clear_first_key(node);  // the first entry is keyless (its old block: unreachable)
    refresh_heads(node);          // derived, never persisted: whatever a crash left is stale
  }
  return keys;
}

}  // namespace pmcached::engine::wbtree

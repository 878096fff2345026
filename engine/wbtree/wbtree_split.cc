// WbTreeEngine::split: a node split made failure-atomic by the redo log in Meta.log.
//
// Persist order for the split of full node N (child at position `parent_pos` of P; P = 0 for the
// root):
//   1. allocate S (N's kind), K (leaf split: a copy of S's lowest key) and R (root split); any
//      failure frees what was taken: nothing changed
//   2. fill S with N's upper half in key order (inner: the middle entry's child is S's first,
//      keyless entry and its key block moves up as K), R = {(-inf, N), (K, S)}; persist S, K, R
//   3. log[1..4] = S, K, P, R, persisted; then store_u64_persist(log[0], N): the commit
//   4. link: root split: meta.root = R; else (K, S) inserted into P right after N (entry protocol)
//   5. truncate N to its entries with keys < K (entry protocol: bit 0 cleared, count, bitmap)
//   6. clear the log: log[0] first (uncommit), then log[1..4]
// A crash before 3 leaves only unreachable blocks (the allocator rebuild frees them). After 3,
// recovery redoes 4–6, each step idempotent (wbtree_recover.cc). Between 4 and 5 N and S both
// hold the upper half; readers cannot see that state (the engine lock), recovery truncates N.
#include <cstring>

#include "engine/pm/persistence.h"
#include "engine/wbtree/wbtree_engine.h"

namespace pmcached::engine::wbtree {

bool WbTreeEngine::split(std::uint64_t node, std::uint64_t parent, unsigned parent_pos) noexcept {
  Meta* m = meta();
  const NodeHeader* h = header(node);
  const bool leaf_split = h->kind == kLeafKind;
  const unsigned count = h->count;
  const unsigned keep = count / 2;  // leaf: 26 stay, 26 move; inner: 27 stay, 27 move (1 keyless)

  // 1. Allocate everything first.
  const std::uint64_t sibling = allocate_node(node_size_of(h->kind));
  std::uint64_t key_block = 0;
  if (sibling != 0) {
    key_block = leaf_split ? new_key_block(key_of(ref_at(node, h->order[keep])))
                           : inner(node)->entries[h->order[keep]].key_block;
  }
  const std::uint64_t new_root =
      (parent == 0 && sibling != 0 && key_block != 0) ? allocate_node(sizeof(Inner)) : 0;
  if (sibling == 0 || key_block == 0 || (parent == 0 && new_root == 0)) {
    if (sibling != 0) allocator_->free(sibling);
    if (leaf_split && key_block != 0) allocator_->free(key_block);
    return false;
  }

  // 2. S (and R), persisted.
  NodeHeader* s = header(sibling);
  s->kind = h->kind;
  const unsigned moved = count - keep;
  for (unsigned i = 0; i < moved; ++i) {
    const unsigned from = h->order[keep + i];
    if (leaf_split) {
      leaf(sibling)->entries[i] = leaf(node)->entries[from];  // the whole word: tag kept
    } else {
      inner(sibling)->entries[i] = inner(node)->entries[from];
    }
    s->order[i] = static_cast<std::uint8_t>(i);
    s->bitmap |= entry_bit(i);
  }
  if (!leaf_split) inner(sibling)->entries[0].key_block = 0;  // K moves up to the parent
  s->count = static_cast<std::uint8_t>(moved);
  s->bitmap |= kValidBit;
  if (!leaf_split) refresh_heads(sibling);
  flush_new_node(sibling, persisted_size_of(s->kind));
  if (new_root != 0) {
    Inner* r = inner(new_root);
    r->header.kind = kInnerKind;
    r->entries[0] = {0, node};
    r->entries[1] = {key_block, sibling};
    r->header.order[0] = 0;
    r->header.order[1] = 1;
    r->header.count = 2;
    r->header.bitmap = kValidBit | entry_bit(0) | entry_bit(1);
    refresh_heads(new_root);
    flush_new_node(new_root, kInnerPersistedBytes);
  }
  region_->fence();

  // 3. The log, then its commit.
  m->log[kLogSibling] = sibling;
  m->log[kLogKey] = key_block;
  m->log[kLogParent] = parent;
  m->log[kLogRoot] = new_root;
  region_->persist(&m->log[kLogSibling], 4 * sizeof(std::uint64_t));
  region_->store_u64_persist(&m->log[kLogNode], node);

  // 4. Link, 5. truncate, 6. clear the log.
  if (parent == 0) {
    region_->store_u64_persist(&m->root, new_root);
  } else {
    insert_entry(parent, parent_pos + 1, key_block, sibling);
  }
  truncate_below(node, block_key(key_block));
  clear_log(m);

  (leaf_split ? leaf_splits_ : inner_splits_).fetch_add(1, std::memory_order_relaxed);
  if (parent == 0) root_splits_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void WbTreeEngine::clear_log(Meta* meta) noexcept {
  region_->store_u64_persist(&meta->log[kLogNode], 0);
  std::memset(&meta->log[kLogSibling], 0, 4 * sizeof(std::uint64_t));
  region_->persist(&meta->log[kLogSibling], 4 * sizeof(std::uint64_t));
}

}  // namespace pmcached::engine::wbtree

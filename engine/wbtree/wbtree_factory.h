// wB+-Tree ("wbtree"): the persistent B+-tree of Chen and Jin as seed 002 §2.2 describes it (the
// 8-byte bitmap + slot-array variant), as a persistent index engine. All nodes live in PM.
//
// Structure (node layout v4 in wbtree_node.h): leaves of 52 unsorted entries (item reference +
// 15-bit key tag in one word, engine/btree/key_tag.h), inner nodes of 54 unsorted {key block,
// child} entries with their key heads (engine/btree/key_heads.h); each node's one-line header
// holds a bitmap of the entries in use (bit 0 = "slot array valid") and the slot array order[]
// listing them in key order. Keys are out of line: leaves
// compare through EngineContext::key_of, separators are key blocks {u8 len; bytes} in the index
// heap. An exact-match leaf search (lookup, and upsert/erase of an existing key) scans the in-use
// entries' tags and reads a key only where the tag matches; only an insert of a new key binary-
// searches order[] (reading keys) for its position; scans walk order[]. All leaves are at one
// depth. The btree::Meta block (magic "WBTREE04") names the root node and holds the split redo
// log; it and the first root leaf are created with the first key. An emptied tree is the meta
// block plus one empty root leaf.
//
// Durability — entry changes are failure-atomic through the bitmap (at least 3 flushes):
//   insert  the entry (tagged ref, or key block + child) is written into a free entry and
//           flushed; order[]/count updated with bit 0 left set, flushed; one fence for both
//           (and the item record); then ONE 8-byte store sets the entry's bit, persisted (the
//           commit). Seed 002's protocol first cleared bit 0 with a fence of its own; we instead
//           let recovery check order[] against the bitmap (wbtree_node.h): 2 fences, not 3
//   replace one store_u64_persist of the leaf entry (the new reference with the same tag)
//   delete  bit 0 cleared, persisted; order[]/count updated, persisted; one store clears the
//           entry's bit and sets bit 0, persisted (the commit)
// A crash leaves at most a node whose slot array is not valid (bit 0 clear, or order[] not
// listing the bitmap's entries): its bitmap is the truth and recovery re-sorts order[] from it.
// Readers only ever see valid slot arrays (the engine lock).
//
// Splits (redo log in Meta.log: N, S, K, P, R; wbtree_node.h): an insert that finds its leaf full
// descends again from the root splitting every full node on the way before entering it (a full
// root first, growing a new root), so a parent always has room. Split of N: allocate S, K (leaf)
// and R (root split) first — an allocation failure frees them and returns kOutOfMemory with
// nothing changed; S takes the upper half in key order (leaf: K = a copy of S's lowest key; inner:
// the middle entry's key block moves up as K and its child becomes S's first, keyless entry);
// R = {(-inf, N), (K, S)}; S, K, R persisted; log[1..4] written and persisted; log[0] = N stored
// and persisted (the commit); then the link (root split: meta.root = R; else (K, S) inserted into
// P after N with the entry protocol), the truncation of N to its entries with keys < K (entry
// protocol with the bitmap), and the log cleared (log[0] first, then log[1..4]).
//
// Deletes: a non-root leaf's last key is removed by unlinking the leaf: the highest ancestor A such
// that every node from A down to the leaf has one entry is deleted from A's parent (one committed
// entry delete), then A..leaf and the removed entry's key block are freed. If the removed entry
// was its node's first, the new first entry's key block is cleared (one store) and freed. Then,
// while the root is an inner node with one child, that child becomes the root (one store). The
// root is never unlinked. Blocks are freed only after the store that unlinks them is persisted.
//
// Recovery (recover(), before any other call): validates what it follows (a corrupt pool throws
// std::runtime_error "pool is corrupt: ..."; a leaf entry needs a reference in the heap and no
// bit past its tag — tags are not checked against keys, see wbtree_recover.cc), replays a
// committed split log (link unless linked, truncate N by key comparison, clear the log), re-sorts
// every node with bit 0 clear, clears a first inner entry's key block, collapses a one-child
// inner root, recounts the keys. Every step is idempotent, so a crash during recovery is
// recovered by the next one. Recovery never allocates or frees: blocks it unlinks are freed by
// the allocator rebuild.
//
// Counted under pm::OpScope (kInsert, kUpdate, kDelete, kRecovery); `stats engine` adds
// leaf_splits, inner_splits, root_splits (a root split also counts as a leaf or inner split) and
// log_replays. Created without a pool, it makes a private in-memory pool (PoolBinding).
//
// Thread safety: one std::shared_mutex (btree::BTreeEngine); lookup/scan/size/stats/for_each_block
// shared, upsert/erase/recover exclusive. scan() holds the lock while calling the visitor.
#pragma once

#include <memory>
#include <string_view>

#include "engine/engine_context.h"
#include "engine/index_engine.h"

namespace pmcached::engine {

inline constexpr std::string_view kWbTreeEngineName = "wbtree";

[[nodiscard]] std::unique_ptr<IndexEngine> make_wbtree_engine(const EngineContext& context);

}  // namespace pmcached::engine

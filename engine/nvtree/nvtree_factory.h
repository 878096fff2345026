// NV-Tree ("nvtree"): the persistent B+-tree of Yang et al. as seed 002 §2.2 describes and
// measures it — append-only leaves in PM with an entry counter, internal nodes in DRAM kept in one
// contiguous array addressed by index and rebuilt whenever a leaf's parent splits.
//
// Persistent part (engine/btree Meta + nvtree_leaf.h): the meta block ("NVTREE02") names the
// first leaf of a chain of leaves in key order; each leaf holds u64 count, u64 next and 58
// append-only 8-byte entries (item references tagged with a 15-bit hash of their key, or
// negative entries naming a dead position; keys live out of line in the items, and a search
// reads one only where the tag matches). Volatile part (inner_array.h): INs and PLNs in one array.
//
// Durability — every change commits with ONE 8-byte failure-atomic store + persist:
//   insert       entries[count] = tagged ref, its line flushed, fence; count + 1 persisted (the
//                seed's two flushes: one for the entry, one for the counter)
//   replace of j entries[count] = new ref, entries[count + 1] = neg(j), flushed, fence;
//                count + 2 persisted
//   delete of j  entries[count] = neg(j), flushed, fence; count + 1 persisted. When j is the
//                leaf's last live entry the leaf is unlinked instead: the predecessor's next (or
//                meta.root) := its next, persisted; then freed. The tree may become just the meta
//                block with root 0.
//   full leaf    out-of-place split: the live entries, sorted by key, go to ONE new leaf when they
//                fit in half a leaf (a compaction, <= 29), else to two new leaves (sorted halves,
//                left.next = right, right.next = old.next); the new leaves are persisted, then the
//                predecessor's next (or meta.root) is swung to them — the commit; the old leaf is
//                freed; the operation is then applied to the proper new leaf as above. No log:
//                before the swing the new leaves are unreachable (the allocator rebuild frees
//                them), after it the old leaf is.
// Reads never look past count; a dead entry's key is never read (its item may be reused).
//
// DRAM inner nodes: a split inserts one bound into its PLN; a full PLN rebuilds the WHOLE array
// (stats: inner_rebuilds, inner_rebuild_us), as does a PLN emptied by an unlink. Start-up
// (recover()) walks the chain, validating every leaf before following it (a corrupt pool throws
// std::runtime_error "pool is corrupt: ..."), builds the array (a leaf's bound = its smallest live
// key) and recounts the keys; it writes nothing and allocates nothing (startup_rebuild_us).
//
// `stats engine`: the B-tree figures plus leaf_splits, leaf_compactions, inner_rebuilds,
// inner_rebuild_us, startup_rebuild_us. Persistence is counted under pm::OpScope (kInsert,
// kUpdate for a replace, kDelete, kRecovery).
//
// Thread safety: one std::shared_mutex (btree::BTreeEngine); lookup/scan/size/stats/for_each_block
// shared, upsert/erase/recover exclusive. scan() holds the lock while calling the visitor.
#pragma once

#include <memory>
#include <string_view>

#include "engine/engine_context.h"
#include "engine/index_engine.h"

namespace pmcached::engine {

inline constexpr std::string_view kNvTreeEngineName = "nvtree";

[[nodiscard]] std::unique_ptr<IndexEngine> make_nvtree_engine(const EngineContext& context);

}  // namespace pmcached::engine

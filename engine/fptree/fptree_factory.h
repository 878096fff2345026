// FPTree ("fptree"): the hybrid SCM-DRAM B+-tree of seed 002 §2.2 (Fig. 2.1; Oukid et al.,
// SIGMOD 2016) as a persistent index engine.
//
// Structure: a chain of persistent leaves in key order (fptree_leaf.h: unsorted entries, a
// validity bitmap, one fingerprint per entry) and volatile inner nodes in DRAM (inner_tree.h)
// that route a key to its leaf. The pool's root field names the meta block
// (engine/btree/btree_engine.h), whose root is the first leaf and whose log[0..1] is the split
// micro-log. Keys live out of line, in the items: an entry is the item reference.
//
// Durability:
//   insert     ref and fingerprint written into a free slot and persisted; then the bitmap bit
//              is set with one 8-byte store and persisted (the commit)
//   replace    the slot's ref is overwritten with one 8-byte store and persisted
//   erase      the bitmap bit is cleared with one 8-byte store and persisted; a leaf left empty
//              is then unlinked with one store to its predecessor's next (or to the meta root)
//              and freed — an empty leaf a crash leaves behind is unlinked by recovery
//   split      (a full leaf L) the micro-log {log[0] = L, log[1] = N, the new leaf} is
//              persisted; L is copied to N and N's bitmap keeps the upper half by key (N
//              persisted); L.next = N persisted (the split is now visible); L's bitmap drops
//              N's entries (persisted); the log is cleared. Recovery with a log: if L.next is
//              not N the split never became visible and the log is dropped (N is unreachable,
//              so the allocator's rebuild frees it); otherwise L's bitmap is cut to the lower
//              half again (idempotent) and the log cleared. Either way no entry is lost or
//              doubled, and replaying a replay is harmless.
// Start-up: recover() replays the log, unlinks empty leaves, and rebuilds the inner nodes from
// the leaf chain (its time is `stats engine` startup_rebuild_us).
//
// Thread safety: one reader-writer lock (BTreeEngine); concurrent calls are safe.
#pragma once

#include <memory>
#include <string_view>

#include "engine/engine_context.h"
#include "engine/index_engine.h"

namespace pmcached::engine {

inline constexpr std::string_view kFpTreeEngineName = "fptree";

[[nodiscard]] std::unique_ptr<IndexEngine> make_fptree_engine(const EngineContext& context);

}  // namespace pmcached::engine

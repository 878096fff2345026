// The adaptive radix engines of seed 002 as persistent index engines:
//
//   "woart"   WOART (§3.5, Algorithms 3–5): ART nodes N4/N16/N48/N256 (art_node.h) changed in
//             place with one 8-byte (or 1-byte) atomic commit each:
//               N4   the pointer goes into a free slot and is persisted, then the key/slot word is
//                    rewritten with one store (insert and delete alike);
//               N16  key and pointer into a free entry, persisted, then the bitmap bit (delete:
//                    the bit is cleared);
//               N48  pointer into a slot no index byte names, persisted, then the index byte
//                    (delete: the index byte is cleared), so a crash between the two leaves a slot
//                    that the next insert simply reuses;
//               N256 the child pointer, as in WORT.
//             Path compression as in WORT: the depth is in the header, a prefix split writes the
//             new parent and the shortened header, then swings the parent slot; a crash in between
//             leaves a depth ahead of the path, which readers tolerate and Algorithm 2 repairs
//             (writers on the way, and recover() over the whole tree).
//   "artcow"  ART+CoW (§3.6): N4 and N16 stay sorted and every change to them is copy-on-write
//             (build a new node, persist it, swing the parent slot); N48 as in WOART; N256 as in
//             WORT; prefix splits and merges are copy-on-write as well, so the header has no depth
//             and nothing is ever left for recovery to repair.
//
// Both: growth (N4->N16->N48->N256 when full) and shrinking (below the type's minimum, see
// art_node.h) copy the node into the other type, persist it, swing the parent slot with one
// 8-byte store and then free the old node; a delete that leaves a non-root node one reference
// replaces the node by that reference (woart: widening a node's header afterwards; artcow: a
// copy with the merged header). A leaf replace and the END slot (a key ending at the node)
// change with one pointer store in both. Keys, leaves and references are as in radix_key.h; the
// root has depth 0 and no prefix, lives in the pool's root field and is never split or merged.
// Nodes are freed only after the store that unlinks them is persisted. Persistence is counted
// under pm::OpScope (kInsert, kUpdate, kDelete, kRecovery); without a pool (engine-agnostic unit
// tests) an engine makes a private in-memory pool
// (radix::PoolBinding::kPrivatePoolBytes).
//
// Thread safety: one std::shared_mutex per engine; lookup/scan/size/stats/for_each_block shared,
// upsert/erase/recover exclusive. scan() holds the lock while calling the visitor.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "engine/engine_context.h"
#include "engine/index_engine.h"

namespace pmcached::engine {

inline constexpr std::string_view kWoartEngineName = "woart";
inline constexpr std::string_view kArtCowEngineName = "artcow";

[[nodiscard]] std::unique_ptr<IndexEngine> make_woart_engine(const EngineContext& context);
[[nodiscard]] std::unique_ptr<IndexEngine> make_artcow_engine(const EngineContext& context);

}  // namespace pmcached::engine

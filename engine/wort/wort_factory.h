// WORT ("wort"): the write-optimal radix tree of seed 002 §3.1–3.4 as a persistent index engine.
//
// Structure: a path-compressed radix tree of 4-bit nodes (16 children + an END slot for a key
// that ends at the node) in the pool's heap; node layout v1 in wort_node.h. Leaves are the item
// references themselves (low bit set), so a key is stored once, in its item, and compared through
// EngineContext::key_of. The pool's root field holds the root node (0 = empty tree). The root
// always has depth 0 and no prefix, so it never splits and is never collapsed. Precondition:
// item references are even (pool offsets of 16-byte-aligned blocks), and key_of(ref) is the key.
//
// Durability — every change commits with ONE 8-byte failure-atomic store + persist:
//   insert into an empty slot   new nodes (if any) are written and persisted first, then the slot
//                               (or, for the first key, the root field) is stored and persisted
//   leaf collision              a new node holding both leaves, persisted; then the slot
//   prefix mismatch (Alg. 1)    new parent persisted with the node's new header, which is written
//                               in place with one 8-byte store and flushed in the same batch;
//                               fence; then the old parent's slot is swung to the new parent
//   replace                     the slot is overwritten with the new item reference
//   erase                       the slot is cleared; if that would leave a non-root node with one
//                               reference, the parent's slot is instead swung straight to the
//                               remaining reference (delete and collapse in one store); if that is
//                               a node, its header is then widened with one 8-byte store + persist
// A crash can leave exactly one kind of damage: a node whose header depth is larger than the
// depth its path implies (Alg. 1 before the swing, or a collapse before the widening). Readers
// tolerate it (positions are absolute; the skipped nibbles are checked at the leaf), writers and
// recover() repair it with Algorithm 2 (common prefix of two leaves from different children).
// Nodes are freed only after the store that unlinks them is persisted.
//
// The engine counts its persistence under pm::OpScope (kInsert, kUpdate, kDelete, kRecovery).
// Created without a pool (EngineContext::pool == nullptr, e.g. the engine-agnostic unit tests),
// it makes a private in-memory pool
// (radix::PoolBinding::kPrivatePoolBytes).
//
// Thread safety: one std::shared_mutex; lookup/scan/size/stats/for_each_block shared,
// upsert/erase/recover exclusive. scan() holds the lock while calling the visitor.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "engine/engine_context.h"
#include "engine/index_engine.h"

namespace pmcached::engine {

inline constexpr std::string_view kWortEngineName = "wort";

[[nodiscard]] std::unique_ptr<IndexEngine> make_wort_engine(const EngineContext& context);

}  // namespace pmcached::engine

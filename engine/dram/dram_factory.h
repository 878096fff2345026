// DramEngine ("dram"): the volatile reference index engine and performance baseline.
//
// Ordinary memory, guarded by one std::shared_mutex: lookup, scan and size take it shared,
// upsert and erase exclusive. An abseil B-tree of 32-byte entries gives scan its key order: the
// key's head (its first 23 bytes and its length, as big-endian integers) and the key's item.
// With EngineContext::hash_index (the default, and the server's), each key's item reference sits
// in a slot of its own, which the tree's entry points at, and an abseil hash set of (64-bit XXH3
// of the key, slot) serves lookup, upsert and erase: a set of a key that exists changes its slot
// and never descends the tree, as in memcached's hash table; a new key goes into both. Without
// it (bench/index_bench) the tree holds the references and does everything, seed 002's B+-tree.
// A key is read from its item through EngineContext::key_of on a full hash match, and in the
// tree when two keys longer than 23 bytes share their first 23. So `ref` must be an item whose
// key is `key` for as long as it is in the index (the store guarantees this).
// Nothing is durable: after a restart the index is empty, and `stats engine` says so.
//
// Thread safety: every method may be called concurrently (see IndexEngine). scan() holds the
// shared lock while it calls the visitor, so a visitor must not call back into the engine for
// a write.
#pragma once

#include <memory>
#include <string_view>

#include "engine/engine_context.h"
#include "engine/index_engine.h"

namespace pmcached::engine {

inline constexpr std::string_view kDramEngineName = "dram";

[[nodiscard]] std::unique_ptr<IndexEngine> make_dram_engine(const EngineContext& context);

}  // namespace pmcached::engine

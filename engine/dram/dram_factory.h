// DramEngine ("dram"): the volatile reference index engine and performance baseline.
//
// An abseil B-tree in ordinary memory, guarded by one std::shared_mutex: lookup, scan and size
// take it shared, upsert and erase exclusive. A slot is 32 bytes: the key's head (its first 23
// bytes and its length, as big-endian integers) and the item reference; a key is read from its
// item through EngineContext::key_of only when two keys longer than 23 bytes share their first
// 23. So `ref` must be an item whose key is `key` for as long as it is in the index (the store
// guarantees this).
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

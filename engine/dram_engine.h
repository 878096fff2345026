// DramEngine ("dram"): the volatile reference index engine and performance baseline.
//
// An abseil B-tree (absl::btree_map<std::string, ItemRef>) in ordinary memory, guarded by one
// std::shared_mutex: lookup, scan and size take it shared, upsert and erase exclusive.
// Nothing is durable: after a restart the index is empty, and `stats engine` says so.
//
// Thread safety: every method may be called concurrently (see IndexEngine). scan() holds the
// shared lock while it calls the visitor, so a visitor must not call back into the engine for
// a write.
#pragma once

#include <memory>
#include <string_view>

#include "engine/index_engine.h"

namespace pmcached::engine {

inline constexpr std::string_view kDramEngineName = "dram";

[[nodiscard]] std::unique_ptr<IndexEngine> make_dram_engine();

}  // namespace pmcached::engine

// Helpers for the `stats engine` figures every persistent engine reports: ratios formatted the
// same way everywhere, and the pm layer's flushes and fences per insert, update and delete.
//
// Thread safety: pure functions; pm::totals() sums the per-thread counters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/index_engine.h"

namespace pmcached::engine {

// numerator / denominator with two decimals; "0" when the denominator is 0.
[[nodiscard]] std::string format_ratio(std::uint64_t numerator, std::uint64_t denominator);

// Appends flushes_per_{insert,update,delete} and fences_per_{insert,update,delete}.
void append_persist_stats(std::vector<EngineStat>& out);

}  // namespace pmcached::engine

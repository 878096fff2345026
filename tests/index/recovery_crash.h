// Crash-test machinery for what happens around a restart, shared by every persistent engine:
// the ops of a workload that did something (split a leaf, unlink one, rebuild the inner nodes —
// read from the engine's own `stats engine` counters), and crashes of the RECOVERY itself: the
// workload is crashed at a point, the restart is crashed at each of its own persistence points
// (log replay, repairs), and a second restart must still find the durability contract, the
// invariants and the allocator's accounting intact (index_crash.h checks the same after one
// restart).
//
// Thread safety: single-threaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tests/index/index_crash.h"
#include "tests/index/index_harness.h"

namespace pmcached::engine::testing {

// The value of `engine`'s statistic `name` ("" if it has none).
[[nodiscard]] std::string stat_of(const IndexEngine& engine, std::string_view name);
// The same as a number; a missing statistic fails the test (and gives 0).
[[nodiscard]] std::uint64_t stat_number(const IndexEngine& engine, std::string_view name);

// The ops of an uncrashed run of `ops` after which the statistic `name` changed.
[[nodiscard]] std::vector<std::size_t> ops_changing_stat(const std::string& engine,
                                                         const std::vector<Op>& ops,
                                                         std::string_view name);

struct RecoveryCrashResult {
  int failures = 0;                  // restarts that broke the contract (each an ADD_FAILURE)
  std::uint64_t restart_points = 0;  // persistence points of the first, uncrashed restart
};

// Crashes `ops` at point `k` (plain or adversarial), then crashes the restart at each of its
// persistence points (plain and adversarial), restarts again and checks everything.
RecoveryCrashResult crash_recovery_everywhere(const std::string& engine, const std::vector<Op>& ops,
                                              std::uint64_t k, bool adversarial);

}  // namespace pmcached::engine::testing

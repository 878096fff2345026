// Crash-test machinery shared by the persistent index engine tests (radix trees and B-trees): a
// workload (a list of puts and deletes) is run on a pool watched by pm::CrashSimulator, crashed at
// a persistence point (plain or adversarial), restarted from the crash image (recover + allocator
// rebuild) and checked: every operation that returned before the point is there, the one in
// flight is wholly there or wholly absent, the invariants and the allocator accounting hold
// (Harness::check), and the tree keeps working through a further round of operations.
//
// Thread safety: single-threaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/pm/crash_simulator.h"
#include "engine/pm/pool.h"
#include "tests/index/index_harness.h"

namespace pmcached::engine::testing {

inline constexpr std::size_t kCrashRegionBytes = pm::kMinPoolSize;

struct Op {
  bool put;
  std::string key;
};

struct Trace {
  std::vector<std::uint64_t> begin, end;  // persistence points before / after each op
  std::vector<ItemRef> refs;              // the item each put published
};

// Runs `ops` on `h`, recording the persistence points of `sim` around each.
Trace run_ops(Harness& h, const pm::CrashSimulator& sim, const std::vector<Op>& ops);

// The mapping after the first `count` ops of a run traced by `t`.
[[nodiscard]] Model model_after(const std::vector<Op>& ops, const Trace& t, std::size_t count);

// Restarts `engine` from `sim`'s crash image (open, recover, allocator rebuild) and appends what
// the restart and Harness::check found to `problems`; nullptr, with the reason appended, when the
// pool is refused as corrupt (as a server start would refuse it).
[[nodiscard]] std::unique_ptr<Harness> restart_checked(const std::string& engine,
                                                       const pm::CrashSimulator& sim,
                                                       std::string& problems);

// Crashes `ops` on `engine` at point `k`, restarts and checks everything; "" when the contract
// holds.
[[nodiscard]] std::string crash_and_check(const std::string& engine, const std::vector<Op>& ops,
                                          std::uint64_t k, bool adversarial);

struct CrashOptions {
  bool quiet = false;                  // count failures without reporting them
  std::vector<std::size_t> crash_ops;  // crash only inside these ops (empty: everywhere)
};

// Runs `ops` crashed at every persistence point (of the chosen ops), plain and adversarial;
// returns the number of points that broke the contract (each reported via ADD_FAILURE unless
// quiet). Fails the test if the chosen ops reach no persistence point.
int crash_everywhere(const std::string& engine, const std::vector<Op>& ops,
                     const CrashOptions& options = {});

// An uncrashed run of `ops`: its persistence points (first, last], and (if `trace` is given)
// the points around each op.
struct PointRange {
  std::uint64_t first = 0, last = 0;
};
[[nodiscard]] PointRange traced_run(const std::string& engine, const std::vector<Op>& ops,
                                    Trace* trace = nullptr);

[[nodiscard]] std::vector<Op> puts(const std::vector<std::string>& keys);

// Shared workloads. Radix splits at several depths: a push-down deep in the key, prefix
// mismatches in the stored and in the optimistic part of a prefix, root slots, and a replace.
[[nodiscard]] std::vector<Op> split_workload();
// Radix deletes that clear a slot, collapse onto a leaf, collapse onto a node (merged header),
// empty the tree, and inserts after that.
[[nodiscard]] std::vector<Op> delete_workload();
// 130 puts of distinct 8-byte keys in a shuffled order (fixed seed): at least two splits of a
// B-tree leaf of up to 64 entries (and of the root above it); in a radix tree, new nodes at
// several depths and node growth.
[[nodiscard]] std::vector<Op> leaf_split_workload();

}  // namespace pmcached::engine::testing

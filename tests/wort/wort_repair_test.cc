// Algorithm 2 (seed 002 §3.4) in the wort engine: crashes between a prefix split's header store
// and its parent swing, or between a collapse and its header widening, leave a header whose depth
// is ahead of its path; recovery must find and repair such headers. The shared crash suites
// (tests/index) prove the contract holds at every point; these prove the repair path is reached.
#include <cstdint>

#include <gtest/gtest.h>

#include "engine/pm/persistence.h"
#include "tests/index/index_crash.h"

namespace pmcached::engine::testing {
namespace {

// Lines recovery flushed (Algorithm 2 repairs) while running `body`.
template <typename Body>
std::uint64_t recovery_flushes(Body body) {
  pm::reset_counters();
  body();
  return pm::totals().by_kind[static_cast<std::size_t>(pm::OpKind::kRecovery)].lines_flushed;
}

TEST(WortRepair, SplitCrashesLeaveHeadersThatRecoveryRepairs) {
  const std::uint64_t repairs =
      recovery_flushes([] { EXPECT_EQ(crash_everywhere("wort", split_workload()), 0); });
  EXPECT_GT(repairs, 0u) << "no crash point left a header for Algorithm 2 to repair";
}

TEST(WortRepair, CollapseCrashesLeaveHeadersThatRecoveryRepairs) {
  const std::uint64_t repairs =
      recovery_flushes([] { EXPECT_EQ(crash_everywhere("wort", delete_workload()), 0); });
  EXPECT_GT(repairs, 0u) << "no crash point fell between a collapse and its header store";
}

}  // namespace
}  // namespace pmcached::engine::testing

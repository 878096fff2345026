// Crash tests of every ART node transition (art_workloads.h), for woart and artcow: each workload
// is crashed at every persistence point of its transition ops, plain and adversarial, restarted,
// and checked (the contract, the invariants of radix_inspect.h including the ART layout rules,
// the allocator accounting, a further round of operations). Before that, an uncrashed run shows
// that the ops crashed are the transitions they are named after.
#include <string>

#include <gtest/gtest.h>

#include "tests/art/art_cases.h"

namespace pmcached::engine::radix::testing {
namespace {

class ArtTransitionCrashTest : public ::testing::TestWithParam<ArtCase> {};

TEST_P(ArtTransitionCrashTest, SurvivesEveryCrashPointOfTheTransition) {
  const std::string& engine = GetParam().engine;
  const Transition& t = GetParam().transition;
  {
    Harness h(engine, kCrashRegionBytes);
    Model model;
    for (std::size_t i = 0; i < t.ops.size(); ++i) {
      if (t.ops[i].put) {
        ASSERT_NE(h.put(t.ops[i].key, model), UpsertStatus::kOutOfMemory);
      } else {
        ASSERT_TRUE(h.del(t.ops[i].key, model));
      }
      for (const TypeStep& s : t.steps) {
        if (s.op == i) {
          ASSERT_EQ(radix_type_at(h, s.probe, s.branch), s.after) << "op " << i;
        }
      }
    }
  }
  CrashOptions options;
  options.crash_ops = t.crash_ops();
  EXPECT_EQ(crash_everywhere(engine, t.ops, options), 0);
}

INSTANTIATE_TEST_SUITE_P(Art, ArtTransitionCrashTest, ::testing::ValuesIn(art_cases()),
                         art_case_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ArtTransitionCrashTest);

}  // namespace
}  // namespace pmcached::engine::radix::testing

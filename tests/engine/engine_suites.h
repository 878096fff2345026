// The engine suites: every test that runs over index engines is instantiated in one of five
// groups, by capability (pmemkv's engine scenarios), over the registry filtered by what the group
// needs, so a newly registered engine joins every group that applies to it without a list to edit:
//
// - all: every registered engine; the IndexEngine interface (tests/engine/index_engine_test.cc).
// - ordered: engines whose capabilities say ordered; scans in key order.
// - concurrent: engines whose capabilities say concurrent; calls from several threads.
// - persistent: engines registered persistent; on a real pool, reopened, checked by the engine's
//   inspector (tests/index/index_functional_test.cc, tests/engine/store_pm_test.cc).
// - crash: engines registered persistent; crashed at persistence points by pm::CrashSimulator
//   (tests/index/index_crash_test.cc, tests/engine/store_crash_test.cc).
//
// A group is the prefix of its instantiations, so the full test names read
// "crash/IndexCrashTest.PrefixKeysSurviveEveryCrashPoint/wort" and `ctest -R '^crash/'` selects a
// group. INSTANTIATE_ENGINE_SUITE(group, Fixture) instantiates a TEST_P fixture (parameter: the
// engine's name) in a group; ENGINE_SUITES_CHECK(Binary), once in every test binary that holds
// engine suites, adds the test that fails when a registered engine is missing from one of them.
//
// Thread safety: call from the test's main thread (gtest registration and test bodies).
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "engine/engine_registry.h"

namespace pmcached::engine::suites {

// The group names, in the order above.
[[nodiscard]] const std::vector<std::string>& engine_suite_names();

// Whether the group `suite` applies to the registered engine `info`. The capabilities are those a
// fresh instance of the engine reports (created once per process, without a pool). Aborts on a
// name that is not a group (a typo in INSTANTIATE_ENGINE_SUITE must not silently run nothing).
[[nodiscard]] bool suite_applies(std::string_view suite, const EngineInfo& info);

// The registered engines the group `suite` applies to, in registry order.
[[nodiscard]] std::vector<std::string> engines_for(std::string_view suite);

// Names each instance after its engine ("wort"), for INSTANTIATE_TEST_SUITE_P.
[[nodiscard]] std::string engine_param_name(const ::testing::TestParamInfo<std::string>& info);

// Each value-parameterised test of this binary instantiated under a group's prefix, as
// "crash/IndexCrashTest.PrefixKeysSurviveEveryCrashPoint", with the engines its instances are
// named after.
using SuiteTests = std::map<std::string, std::set<std::string>>;
[[nodiscard]] SuiteTests instantiated_suite_tests();

// The groups `tests` instantiates.
[[nodiscard]] std::set<std::string> suites_of(const SuiteTests& tests);

// Every test in `tests` must run for exactly the registered engines its group applies to. One
// line per engine missing (or present that should not be); "" when every test is complete.
[[nodiscard]] std::string missing_from_suites(const SuiteTests& tests);

// The body of ENGINE_SUITES_CHECK: this binary holds an engine suite, and none lacks an engine.
void expect_suites_complete();

}  // namespace pmcached::engine::suites

// Instantiates the TEST_P fixture `fixture` (TestWithParam<std::string>: the engine's name) in the
// group `suite` (one of: all ordered concurrent persistent crash), over engines_for(suite).
#define INSTANTIATE_ENGINE_SUITE(suite, fixture)                                                 \
  INSTANTIATE_TEST_SUITE_P(suite, fixture,                                                       \
                           ::testing::ValuesIn(::pmcached::engine::suites::engines_for(#suite)), \
                           ::pmcached::engine::suites::engine_param_name)

// Defines <binary>EngineSuites.EveryRegisteredEngineIsInEverySuiteThatAppliesToIt (named after
// the binary, so that the ctest names of the binaries sharing a folder stay distinct).
#define ENGINE_SUITES_CHECK(binary)                                                \
  TEST(binary##EngineSuites, EveryRegisteredEngineIsInEverySuiteThatAppliesToIt) { \
    ::pmcached::engine::suites::expect_suites_complete();                          \
  }

// The engine suites' own tests (engine_suites.h), in engine_test: the binary that holds all five
// groups (all, ordered, concurrent: index_engine_test.cc; persistent: store_pm_test.cc; crash:
// store_crash_test.cc).
#include "tests/engine/engine_suites.h"

#include <gtest/gtest.h>

namespace pmcached::engine::suites {
namespace {

ENGINE_SUITES_CHECK(EngineTest)

TEST(EngineSuites, EngineTestHoldsEveryGroup) {
  const std::set<std::string> groups(engine_suite_names().begin(), engine_suite_names().end());
  EXPECT_EQ(suites_of(instantiated_suite_tests()), groups);
}

// The check can fail: a test that left out an engine, one that ran a volatile engine in a
// persistent-only group, and one that ran an unregistered engine are each reported.
TEST(EngineSuites, TheCheckReportsAMissingEngine) {
  std::set<std::string> all_but_dram;
  for (const EngineInfo& info : registered_engines()) all_but_dram.insert(info.name);
  all_but_dram.erase("dram");
  SuiteTests tests = {{"all/FakeTest.Case", all_but_dram},
                      {"crash/FakeTest.Case", {"dram"}},
                      {"ordered/FakeTest.Case", std::set<std::string>(all_but_dram)}};
  tests["ordered/FakeTest.Case"].insert({"dram", "no-such-engine"});
  const std::string problems = missing_from_suites(tests);
  EXPECT_NE(problems.find("all/FakeTest.Case: registered engine 'dram' is missing"),
            std::string::npos)
      << problems;
  EXPECT_NE(problems.find("crash/FakeTest.Case: runs on 'dram'"), std::string::npos) << problems;
  EXPECT_NE(problems.find("crash/FakeTest.Case: registered engine 'wort' is missing"),
            std::string::npos)
      << problems;
  EXPECT_NE(problems.find("'no-such-engine', which is not a registered engine"), std::string::npos)
      << problems;
  EXPECT_EQ(problems.find("ordered/FakeTest.Case: registered"), std::string::npos) << problems;
  EXPECT_EQ(suites_of(tests), (std::set<std::string>{"all", "crash", "ordered"}));
}

}  // namespace
}  // namespace pmcached::engine::suites

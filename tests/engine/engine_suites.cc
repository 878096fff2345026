// The engine suites by capability. See engine_suites.h.
#include "tests/engine/engine_suites.h"

#include <cstdio>
#include <cstdlib>
#include <map>

#include "engine/index_engine.h"

namespace pmcached::engine::suites {
namespace {

// What a fresh instance of `info` says it can do; each engine is created once per process.
EngineCapabilities capabilities_of(const EngineInfo& info) {
  static std::map<std::string, EngineCapabilities, std::less<>> known;
  const auto it = known.find(info.name);
  if (it != known.end()) return it->second;
  EngineContext context;
  context.key_of = [](ItemRef) { return std::string_view(); };  // no keys are ever read
  const std::unique_ptr<IndexEngine> engine = info.create(context);
  const EngineCapabilities caps = engine->capabilities();
  known.emplace(info.name, caps);
  return caps;
}

}  // namespace

const std::vector<std::string>& engine_suite_names() {
  static const std::vector<std::string> names = {"all", "ordered", "concurrent", "persistent",
                                                 "crash"};
  return names;
}

bool suite_applies(std::string_view suite, const EngineInfo& info) {
  // These suites test IndexEngines; an engine that owns its records has its own (tests/bptree).
  if (!info.create) return false;
  if (suite == "all") return true;
  if (suite == "ordered") return capabilities_of(info).ordered;
  if (suite == "concurrent") return capabilities_of(info).concurrent;
  if (suite == "persistent" || suite == "crash") return info.persistent;
  std::fprintf(stderr,
               "engine_suites: '%.*s' is not an engine suite (all ordered concurrent "
               "persistent crash)\n",
               static_cast<int>(suite.size()), suite.data());
  std::abort();
}

std::vector<std::string> engines_for(std::string_view suite) {
  std::vector<std::string> names;
  for (const EngineInfo& info : registered_engines()) {
    if (suite_applies(suite, info)) names.push_back(info.name);
  }
  return names;
}

std::string engine_param_name(const ::testing::TestParamInfo<std::string>& info) {
  return info.param;
}

namespace {

bool is_suite_name(std::string_view name) {
  for (const std::string& suite : engine_suite_names()) {
    if (suite == name) return true;
  }
  return false;
}

}  // namespace

SuiteTests instantiated_suite_tests() {
  SuiteTests tests;
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit.total_test_suite_count(); ++i) {
    const ::testing::TestSuite& test_suite = *unit.GetTestSuite(i);
    const std::string_view suite_name = test_suite.name();
    const std::size_t slash = suite_name.find('/');
    if (slash == std::string_view::npos || !is_suite_name(suite_name.substr(0, slash))) continue;
    for (int j = 0; j < test_suite.total_test_count(); ++j) {
      const ::testing::TestInfo& test = *test_suite.GetTestInfo(j);
      if (test.value_param() == nullptr) continue;
      const std::string_view name = test.name();  // "PrefixKeys/wort"
      const std::size_t last = name.rfind('/');
      if (last == std::string_view::npos) continue;
      std::string key(suite_name);
      key.append(".").append(name.substr(0, last));
      tests[key].emplace(name.substr(last + 1));
    }
  }
  return tests;
}

std::set<std::string> suites_of(const SuiteTests& tests) {
  std::set<std::string> suites;
  for (const auto& [test, engines] : tests) {
    suites.insert(test.substr(0, test.find('/')));
  }
  return suites;
}

std::string missing_from_suites(const SuiteTests& tests) {
  std::string problems;
  for (const auto& [test, engines] : tests) {
    const std::string suite = test.substr(0, test.find('/'));
    for (const EngineInfo& info : registered_engines()) {
      const bool applies = suite_applies(suite, info);
      const bool present = engines.count(info.name) != 0;
      if (applies && !present) {
        problems += test + ": registered engine '" + info.name + "' is missing (suite " + suite +
                    " applies to it)\n";
      } else if (!applies && present) {
        problems +=
            test + ": runs on '" + info.name + "', which suite " + suite + " does not apply to\n";
      }
    }
    for (const std::string& engine : engines) {
      if (find_engine(engine) == nullptr) {
        problems += test + ": runs on '" + engine + "', which is not a registered engine\n";
      }
    }
  }
  return problems;
}

void expect_suites_complete() {
  const SuiteTests tests = instantiated_suite_tests();
  ASSERT_FALSE(suites_of(tests).empty()) << "this binary holds no engine suite";
  EXPECT_EQ(missing_from_suites(tests), "");
}

}  // namespace pmcached::engine::suites

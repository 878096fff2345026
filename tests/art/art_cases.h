// The parameter of the ART transition suites: an engine (woart, artcow — those registered) and a
// transition workload (art_workloads.h).
//
// Thread safety: plain values.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/art/art_workloads.h"

namespace pmcached::engine::radix::testing {

struct ArtCase {
  std::string engine;
  Transition transition;
};

// Every registered ART engine with every transition workload.
[[nodiscard]] std::vector<ArtCase> art_cases();
[[nodiscard]] std::string art_case_name(const ::testing::TestParamInfo<ArtCase>& info);

// The ART engines that are registered.
[[nodiscard]] std::vector<std::string> art_engines();

}  // namespace pmcached::engine::radix::testing

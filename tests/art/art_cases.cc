// The ART transition suites' parameters. See art_cases.h.
#include "tests/art/art_cases.h"

namespace pmcached::engine::radix::testing {

std::vector<std::string> art_engines() { return registered_of({"woart", "artcow"}); }

std::vector<ArtCase> art_cases() {
  std::vector<ArtCase> out;
  for (const std::string& engine : art_engines()) {
    for (auto* list : {&growth_and_shrink, &prefix_splits, &merges, &end_slots}) {
      for (Transition& t : list()) out.push_back({engine, std::move(t)});
    }
  }
  return out;
}

std::string art_case_name(const ::testing::TestParamInfo<ArtCase>& info) {
  return info.param.engine + info.param.transition.name;
}

}  // namespace pmcached::engine::radix::testing

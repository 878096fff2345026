// What an engine-specific invariants checker (an "inspector") found in an index engine's tree,
// read from the pool directly — never through the engine's code — and the table that gives the
// inspector of an engine by name (inspectors.cc). The generic Harness (index_harness.h) compares
// the report with the engine's own view and with the allocator's accounting.
//
// Test items: the Harness stores a key as a persisted block {u8 len; key bytes}; item_key()
// reads one back, for every inspector.
//
// Thread safety: pure functions and values over a region nobody writes meanwhile.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/index_engine.h"
#include "engine/pm/pm_region.h"

namespace pmcached::engine::testing {

struct TreeReport {
  std::vector<std::string> problems;                         // empty: every invariant holds
  std::vector<std::pair<std::uint64_t, std::size_t>> nodes;  // (offset, layout bytes) of every
                                                             // block the engine owns
  std::vector<std::pair<std::string, ItemRef>> leaves;       // (key, ref), in key order
};

// Reads the tree whose root field in the pool is `root` (0: none) and checks its invariants.
using TreeInspector = std::function<TreeReport(const pm::PmRegion& region, std::uint64_t root)>;

// The inspector of the engine called `engine`; an empty function for an unknown name.
[[nodiscard]] TreeInspector inspector_for(std::string_view engine);

// The key of a test item (a view into the region; "" if `ref` is out of range).
[[nodiscard]] inline std::string_view item_key(const pm::PmRegion& region, ItemRef ref) {
  if (ref == 0 || ref >= region.size()) return {};
  const auto* p = region.at<unsigned char>(ref);
  const std::size_t len = std::min<std::size_t>(p[0], region.size() - ref - 1);
  return {reinterpret_cast<const char*>(p + 1), len};
}

}  // namespace pmcached::engine::testing

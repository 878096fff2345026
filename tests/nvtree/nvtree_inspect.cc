// The NV-Tree invariants checker. See nvtree_inspect.h.
#include "tests/nvtree/nvtree_inspect.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <xxhash.h>

namespace pmcached::engine::nvtree::testing {
namespace {

using engine::testing::TreeReport;

// The layout, decoded independently of the engine's headers.
constexpr std::uint64_t kMagic = 0x323045455254564eull;  // "NVTREE02", little-endian
constexpr std::size_t kMetaBytes = 64;
constexpr std::size_t kLeafBytes = 480;
constexpr std::uint64_t kEntries = 58;
constexpr std::uint64_t kDeadBit = std::uint64_t{1} << 63;
constexpr std::uint64_t kRefMask = (std::uint64_t{1} << 48) - 1;  // positive: tag << 48 | ref

// The tag a positive entry must carry: bits 49..63 of XXH3 of the key, in bits 48..62.
std::uint64_t expected_tag(std::string_view key) {
  return (XXH3_64bits(key.data(), key.size()) >> 49) << 48;
}

std::uint64_t word(const pm::PmRegion& region, std::uint64_t offset) {
  std::uint64_t v;
  std::memcpy(&v, region.base() + offset, sizeof v);
  return v;
}

bool in_bounds(const pm::PmRegion& region, std::uint64_t offset, std::size_t bytes) {
  return offset % 8 == 0 && offset >= 4096 && offset <= region.size() &&
         bytes <= region.size() - offset;
}

// The live (key, ref) of the leaf at `offset`; problems go to `report`.
std::vector<std::pair<std::string, ItemRef>> read_leaf(const pm::PmRegion& region,
                                                       std::uint64_t offset, TreeReport& report) {
  const std::string where = "leaf " + std::to_string(offset) + ": ";
  std::vector<std::pair<std::string, ItemRef>> live;
  const std::uint64_t count = word(region, offset);
  if (count > kEntries) {
    report.problems.push_back(where + "count " + std::to_string(count) + " > 58");
    return live;
  }
  std::vector<std::uint64_t> e(count);
  std::vector<bool> positive(count, false), killed(count, false);
  for (std::uint64_t i = 0; i < count; ++i) {
    e[i] = word(region, offset + 16 + 8 * i);
    if (e[i] == 0) {
      report.problems.push_back(where + "entry " + std::to_string(i) + " is 0");
      continue;
    }
    if ((e[i] & kDeadBit) == 0) {
      positive[i] = true;
      continue;
    }
    const std::uint64_t t = e[i] & ~kDeadBit;
    if (t == i) {  // killed in place
      killed[i] = true;
    } else if (t > i || !positive[t]) {
      report.problems.push_back(where + "negative entry " + std::to_string(i) + " names " +
                                std::to_string(t) + ", not an earlier positive entry");
    } else if (killed[t]) {
      report.problems.push_back(where + "entry " + std::to_string(t) + " is killed twice");
    } else {
      killed[t] = true;
    }
  }
  std::set<std::string> keys;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (!positive[i] || killed[i]) continue;
    const ItemRef ref = e[i] & kRefMask;
    std::string key(engine::testing::item_key(region, ref));
    if ((e[i] & ~kRefMask) != expected_tag(key)) {
      report.problems.push_back(where + "entry " + std::to_string(i) +
                                ": its tag does not match its key");
    }
    if (!keys.insert(key).second) report.problems.push_back(where + "a key is live twice");
    live.emplace_back(std::move(key), ref);
  }
  if (live.empty()) report.problems.push_back(where + "no live entry");
  return live;
}

}  // namespace

TreeReport inspect_nvtree(const pm::PmRegion& region, std::uint64_t pool_root) {
  TreeReport report;
  if (pool_root == 0) return report;
  if (!in_bounds(region, pool_root, kMetaBytes)) {
    report.problems.push_back("meta block " + std::to_string(pool_root) + " out of bounds");
    return report;
  }
  if (word(region, pool_root) != kMagic) {
    report.problems.push_back("meta block without the NVTREE02 tag");
    return report;
  }
  report.nodes.emplace_back(pool_root, kMetaBytes);

  std::set<std::uint64_t> seen;
  bool have_previous = false;
  std::string previous_max;
  for (std::uint64_t offset = word(region, pool_root + 8); offset != 0;
       offset = word(region, offset + 8)) {
    if (!in_bounds(region, offset, kLeafBytes)) {
      report.problems.push_back("leaf " + std::to_string(offset) + " out of bounds");
      break;
    }
    if (!seen.insert(offset).second) {
      report.problems.push_back("leaf " + std::to_string(offset) + " reached twice");
      break;
    }
    report.nodes.emplace_back(offset, kLeafBytes);
    std::vector<std::pair<std::string, ItemRef>> live = read_leaf(region, offset, report);
    if (live.empty()) continue;
    std::sort(live.begin(), live.end());
    if (have_previous && !(previous_max < live.front().first)) {
      report.problems.push_back("leaf " + std::to_string(offset) +
                                " holds a key not above every key of the leaf before it");
    }
    have_previous = true;
    previous_max = live.back().first;
    for (auto& entry : live) report.leaves.push_back(std::move(entry));
  }
  std::sort(report.leaves.begin(), report.leaves.end());
  return report;
}

}  // namespace pmcached::engine::nvtree::testing

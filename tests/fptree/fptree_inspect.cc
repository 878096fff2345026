// The fptree invariants checker. See fptree_inspect.h.
#include "tests/fptree/fptree_inspect.h"

#include <algorithm>
#include <bit>
#include <set>
#include <string>

#include <xxhash.h>

#include "engine/btree/btree_engine.h"
#include "engine/fptree/fptree_engine.h"
#include "engine/fptree/fptree_leaf.h"

namespace pmcached::engine::fptree::testing {

using engine::testing::item_key;
using engine::testing::TreeReport;

TreeReport inspect_fptree(const pm::PmRegion& region, std::uint64_t root) {
  TreeReport report;
  auto problem = [&](std::uint64_t offset, const std::string& what) {
    report.problems.push_back("fptree node " + std::to_string(offset) + ": " + what);
  };
  auto inside = [&](std::uint64_t offset, std::size_t bytes) {
    return offset != 0 && offset % 8 == 0 && offset + bytes <= region.size();
  };
  if (root == 0) return report;
  if (!inside(root, sizeof(btree::Meta))) {
    problem(root, "the meta block is outside the pool");
    return report;
  }
  const auto& meta = *region.at<btree::Meta>(root);
  report.nodes.emplace_back(root, sizeof(btree::Meta));
  if (meta.magic != kMetaMagic) problem(root, "wrong meta magic");
  if (meta.log[0] != 0 || meta.log[1] != 0) problem(root, "a split log is left");

  std::set<std::uint64_t> seen;
  std::string previous_max;
  bool first = true;
  for (std::uint64_t offset = meta.root; offset != 0;) {
    if (!inside(offset, sizeof(Leaf)) || !seen.insert(offset).second) {
      problem(offset, "outside the pool or reached twice");
      break;
    }
    const Leaf& leaf = *region.at<Leaf>(offset);
    report.nodes.emplace_back(offset, sizeof(Leaf));
    if ((leaf.bitmap & ~kAllSlots) != 0) problem(offset, "bits beyond its 48 slots");
    std::vector<std::pair<std::string, ItemRef>> entries;
    for (std::uint64_t bits = leaf.bitmap & kAllSlots; bits != 0; bits &= bits - 1) {
      const int slot = std::countr_zero(bits);
      const std::string key(item_key(region, leaf.refs[slot]));
      const auto fp = static_cast<std::uint8_t>(XXH3_64bits(key.data(), key.size()));
      if (leaf.fingerprints[slot] != fp) problem(offset, "a fingerprint does not match its key");
      entries.emplace_back(key, leaf.refs[slot]);
    }
    if (entries.empty()) problem(offset, "an empty leaf in the chain");
    std::sort(entries.begin(), entries.end());
    for (std::size_t i = 1; i < entries.size(); ++i) {
      if (entries[i].first == entries[i - 1].first) problem(offset, "a key held twice");
    }
    if (!entries.empty()) {
      if (!first && entries.front().first <= previous_max) {
        problem(offset, "keys not above the previous leaf's");
      }
      previous_max = entries.back().first;
      first = false;
    }
    report.leaves.insert(report.leaves.end(), entries.begin(), entries.end());
    offset = leaf.next;
  }
  return report;
}

}  // namespace pmcached::engine::fptree::testing

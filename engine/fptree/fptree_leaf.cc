// FPTree leaf reading and split planning. See fptree_leaf.h.
#include "engine/fptree/fptree_leaf.h"

#include <algorithm>

#include <xxhash.h>

namespace pmcached::engine::fptree {

std::uint8_t fingerprint(std::string_view key) noexcept {
  return static_cast<std::uint8_t>(XXH3_64bits(key.data(), key.size()));
}

int find_slot(const Leaf& leaf, std::string_view key, std::uint8_t fp, const KeyOf& key_of) {
  for (std::uint64_t bits = leaf.bitmap & kAllSlots; bits != 0; bits &= bits - 1) {
    const int slot = std::countr_zero(bits);
    if (leaf.fingerprints[slot] == fp && key_of(leaf.refs[slot]) == key) return slot;
  }
  return -1;
}

void collect(const Leaf& leaf, const KeyOf& key_of, std::vector<btree::KeyedRef>& out) {
  for (std::uint64_t bits = leaf.bitmap & kAllSlots; bits != 0; bits &= bits - 1) {
    const int slot = std::countr_zero(bits);
    out.push_back({key_of(leaf.refs[slot]), leaf.refs[slot]});
  }
}

SplitPlan plan_split(const Leaf& leaf, const KeyOf& key_of) {
  struct Entry {
    std::string_view key;
    unsigned slot;
  };
  std::vector<Entry> entries;
  for (std::uint64_t bits = leaf.bitmap & kAllSlots; bits != 0; bits &= bits - 1) {
    const auto slot = static_cast<unsigned>(std::countr_zero(bits));
    entries.push_back({key_of(leaf.refs[slot]), slot});
  }
  const std::size_t mid = entries.size() / 2;
  std::nth_element(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(mid),
                   entries.end(), [](const Entry& a, const Entry& b) { return a.key < b.key; });
  SplitPlan plan;
  plan.bound = entries[mid].key;
  for (std::size_t i = mid; i < entries.size(); ++i) {
    plan.right_bits |= std::uint64_t{1} << entries[i].slot;
  }
  return plan;
}

}  // namespace pmcached::engine::fptree

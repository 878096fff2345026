// Seed 004 §3.6: lookup on any bytes terminates, returns begin <= end <= slot_count and reads
// nothing outside the region. Every region lives in a heap buffer of exactly its size, so ASan
// (the sanitizer build) reports a read one byte past it. The regions: random bytes, random bytes
// under a plausible header and node headers (so the walk goes deep), and valid trees with bytes
// flipped or cut short. shape(), range_array() and range_of_slot() get the same bytes.
#include <algorithm>
#include <cstddef>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/b2tree/embedded_tree.h"
#include "tests/b2tree/tree_fixture.h"

namespace pmcached::engine::b2tree {
namespace {

using testing::Keys;

constexpr int kRegions = 12000;
constexpr int kKeysPerRegion = 24;  // ~300,000 lookups

// Random bytes, or (half the time) a header naming a few ranges (with or without unconfirmed
// prefixes) followed by bytes biased towards node headers, small lengths and small offsets.
std::vector<std::byte> random_region(std::mt19937& rng) {
  std::vector<std::byte> r(rng() % 96);
  for (std::byte& b : r) b = static_cast<std::byte>(rng());
  if (r.size() >= 8 && rng() % 2) {
    const unsigned ranges = 1 + rng() % 3;
    const bool unconfirmed = rng() % 2 != 0;  // the flag of unconfirmed prefixes after the bounds
    r[0] = static_cast<std::byte>(ranges);
    r[1] = unconfirmed ? std::byte{0x80} : std::byte{0};
    for (std::size_t i = 2 + (unconfirmed ? 3 : 2) * ranges; i < r.size(); ++i) {
      switch (rng() % 5) {
        case 0:  // a decision, with a prefix of 0..3 bytes, leaf or inner
          r[i] = static_cast<std::byte>(0x80 | (rng() % 2) << 6 | (rng() % 4) << 4 | rng() % 10);
          break;
        case 1: r[i] = static_cast<std::byte>(rng() % 4); break;         // short span
        case 2: r[i] = static_cast<std::byte>(rng() % r.size()); break;  // an offset
        case 3: r[i] = static_cast<std::byte>(0x80); break;              // a range tag byte
        default: break;
      }
    }
  }
  return r;
}

// A valid tree of a random small key set, then flipped bytes or cut short.
std::vector<std::byte> mutated_region(std::mt19937& rng, const Keys& pool) {
  Keys keys;
  const std::size_t n = 1 + rng() % 40;
  const std::size_t start = rng() % (pool.size() - n);
  keys.assign(pool.begin() + static_cast<std::ptrdiff_t>(start),
              pool.begin() + static_cast<std::ptrdiff_t>(start + n));
  std::vector<std::byte> r =
      testing::build_exact(keys, 1 + rng() % 8, 32767,
                           rng() % 2 != 0 ? Unconfirmed::kPrefixes : Unconfirmed::kNone)
          .region;
  if (rng() % 4 == 0) {
    r.resize(rng() % (r.size() + 1));
    r.shrink_to_fit();
  }
  const unsigned flips = rng() % 4;
  for (unsigned i = 0; i < flips && !r.empty(); ++i)
    r[rng() % r.size()] ^= static_cast<std::byte>(1u << (rng() % 8));
  return r;
}

TEST(EmbeddedTreeFuzzTest, LookupOnAnyBytesStaysInsideAndReturnsBoundsWithinTheSlots) {
  std::mt19937 rng(2024);
  const Keys pool = [] {
    Keys k = testing::url_keys(300, 5);
    const Keys r = testing::random_keys(300, 6, 8);
    k.insert(k.end(), r.begin(), r.end());
    return testing::sorted_unique(std::move(k));
  }();
  std::size_t deep = 0;  // lookups answered with a range rather than the whole page
  for (int n = 0; n < kRegions; ++n) {
    // An exactly-sized heap copy: any read past the end is an ASan error.
    const std::vector<std::byte> made = n % 3 == 0 ? random_region(rng) : mutated_region(rng, pool);
    const std::unique_ptr<std::byte[]> heap(new std::byte[made.size()]);
    std::copy(made.begin(), made.end(), heap.get());
    const std::span<const std::byte> region(heap.get(), made.size());
    for (int i = 0; i < kKeysPerRegion; ++i) {
      std::string key;
      if (rng() % 2) {
        key = pool[rng() % pool.size()];
      } else {
        key.resize(rng() % 13);
        for (char& c : key) c = static_cast<char>(rng());
      }
      const std::size_t slots = rng() % 3 == 0 ? rng() % 70000 : rng() % 48;
      const RangeHit h = lookup(region, key, slots);
      ASSERT_LE(h.begin, h.end);
      ASSERT_LE(h.end, slots);
      if (h.skip != kNoSkip) {
        ASSERT_LE(h.skip, key.size());
        ASSERT_GE(h.heads_at, h.skip);  // an unconfirmed prefix only ever adds bytes
        ASSERT_LT(h.heads_at, kNoSkip);
      } else {
        ASSERT_EQ(h.heads_at, kNoSkip);
      }
      if (h.skip != kNoSkip || h.begin != 0 || h.end != slots) ++deep;
    }
    const TreeShape s = shape(region);
    EXPECT_EQ(s.bytes, region.size());
    const RangeArray a = range_array(region);
    EXPECT_LE(a.offset + 2 * a.count, region.size());
    EXPECT_LE(range_of_slot(region, rng() % 100), std::max<std::size_t>(a.count, 1) - 1);
  }
  // Most lookups walk the nodes down to a range (the mutated trees mostly parse): the walk, not
  // just the header check, was exercised.
  EXPECT_GT(deep, std::size_t{kRegions} * kKeysPerRegion / 4);
}

}  // namespace
}  // namespace pmcached::engine::b2tree

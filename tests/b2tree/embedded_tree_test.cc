// The embedded tree (engine/b2tree/embedded_tree.h): lookups over built trees keep the invariant
// (the lower bound lies in the range, skip bytes are shared) for present and absent keys, over
// several key sets and thresholds; ranges respect the threshold; a small budget gives a coarser
// but correct tree; the range adjustments keep the invariant through inserts and erases; the
// tree of URL-like 64 KiB pages stays within 0.5% of the page.
#include "engine/b2tree/embedded_tree.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "tests/b2tree/tree_fixture.h"

namespace pmcached::engine::b2tree {
namespace {

using testing::build_exact;
using testing::Built;
using testing::check_lookup;
using testing::Keys;

const Keys& key_set(const std::string& name) {
  static const std::map<std::string, Keys> sets = {
      {"Urls", testing::url_keys(1000, 1)},
      {"Words", testing::word_keys(1000, 2)},
      {"RandomBytes", testing::random_keys(1000, 3)},
      {"Prefixes", testing::prefix_keys()},
      {"OneKey", Keys{"only"}},
      {"TwoKeys", Keys{"alpha", "alphabet"}},
      {"NoKeys", Keys{}},
  };
  return sets.at(name);
}

// Keys near the page's keys but (mostly) not in it: each key's byte changed up and down, cut
// short, extended, plus random strings.
Keys absent_keys(const Keys& keys, unsigned seed) {
  std::mt19937 rng(seed);
  Keys out;
  for (const std::string& k : keys) {
    if (!k.empty()) {
      const std::size_t at = rng() % k.size();
      std::string up = k, down = k;
      up[at] = static_cast<char>(static_cast<unsigned char>(up[at]) + 1);
      down[at] = static_cast<char>(static_cast<unsigned char>(down[at]) - 1);
      out.push_back(up);
      out.push_back(down);
      out.push_back(k.substr(0, k.size() - 1));
      out.push_back(k.substr(0, rng() % k.size()));
    }
    out.push_back(k + std::string(1, '\0'));
    out.push_back(k + "\xFF");
    out.push_back(k + "m");
  }
  const Keys random = testing::random_keys(200, seed + 1, 12);
  out.insert(out.end(), random.begin(), random.end());
  out.push_back("");
  return out;
}

class EmbeddedTreeTest : public ::testing::TestWithParam<std::tuple<std::string, unsigned>> {
 protected:
  const Keys& keys() const { return key_set(std::get<0>(GetParam())); }
  unsigned threshold() const { return std::get<1>(GetParam()); }
};

TEST_P(EmbeddedTreeTest, EveryKeyLandsInItsRangeWithTheRangesSkip) {
  const Built t = build_exact(keys(), threshold());
  ASSERT_GT(t.result.bytes, 0u);
  for (std::size_t i = 0; i < keys().size(); ++i) {
    const RangeHit h = check_lookup(t.region, keys(), keys()[i]);
    EXPECT_LE(h.begin, i);
    EXPECT_LT(i, h.end);
    ASSERT_NE(h.skip, kNoSkip) << i;
    ASSERT_LT(h.range, t.result.range_skip.size());
    EXPECT_EQ(h.skip, t.result.range_skip[h.range]);
    EXPECT_EQ(h.heads_at, h.skip);  // built without unconfirmed prefixes
    EXPECT_EQ(h.end, t.result.range_end[h.range]);
  }
}

// As a leaf page builds it: a range's heads may start past its skip, at bytes all of its keys
// share, and the lookup of each key says where (the range_skip the page took its heads at).
TEST_P(EmbeddedTreeTest, WithUnconfirmedPrefixesTheRangesKeysShareTheirFirstHeadsAtBytes) {
  const Built t = build_exact(keys(), threshold(), 32767, Unconfirmed::kPrefixes);
  ASSERT_GT(t.result.bytes, 0u);
  for (std::size_t i = 0; i < keys().size(); ++i) {
    const RangeHit h = check_lookup(t.region, keys(), keys()[i]);
    ASSERT_NE(h.skip, kNoSkip) << i;
    EXPECT_GE(h.heads_at, h.skip);
    EXPECT_EQ(h.heads_at, t.result.range_skip[h.range]);
    for (std::size_t j = h.begin; j < h.end; ++j) {
      ASSERT_GE(keys()[j].size(), h.heads_at);
      EXPECT_EQ(keys()[j].compare(0, h.heads_at, keys()[i], 0, h.heads_at), 0) << i << " " << j;
    }
  }
  for (const std::string& k : absent_keys(keys(), threshold())) {
    const RangeHit h = check_lookup(t.region, keys(), k);
    EXPECT_TRUE(h.skip == kNoSkip ? h.heads_at == kNoSkip : h.heads_at >= h.skip);
  }
}

TEST_P(EmbeddedTreeTest, AbsentKeysLandWhereTheirLowerBoundIs) {
  const Built t = build_exact(keys(), threshold());
  for (const std::string& k : absent_keys(keys(), threshold())) check_lookup(t.region, keys(), k);
}

TEST_P(EmbeddedTreeTest, RangesHoldAtMostThresholdKeysUnlessOnlyAZeroByteTellsThemApart) {
  const Built t = build_exact(keys(), threshold());
  const std::vector<std::uint16_t>& ends = t.result.range_end;
  ASSERT_FALSE(ends.empty());
  EXPECT_EQ(ends.back(), keys().size());
  std::size_t begin = 0;
  for (const std::uint16_t end : ends) {
    ASSERT_LE(begin, end);
    if (end - begin > threshold()) {
      // A key and its extensions by \0: no separator byte can split them (embedded_tree.cc).
      const std::string& first = keys()[begin];
      for (std::size_t i = begin + 1; i < end; ++i)
        EXPECT_EQ(keys()[i].substr(0, first.size() + 1), first + std::string(1, '\0')) << i;
    }
    begin = end;
  }
}

TEST_P(EmbeddedTreeTest, ShapeRangeArrayAndRangeOfSlotDescribeTheBuild) {
  const Built t = build_exact(keys(), threshold());
  const TreeShape s = shape(t.region);
  EXPECT_EQ(s.bytes, t.region.size());
  EXPECT_EQ(s.ranges, t.result.range_end.size());
  EXPECT_GE(s.decision_nodes, 1u);
  const RangeArray a = range_array(t.region);
  ASSERT_EQ(a.count, t.result.range_end.size());
  for (std::size_t i = 0; i < a.count; ++i) {
    std::uint16_t v;
    std::memcpy(&v, t.region.data() + a.offset + 2 * i, 2);
    EXPECT_EQ(v, t.result.range_end[i]);
  }
  for (std::size_t i = 0; i < keys().size(); ++i) {
    const std::uint16_t r = range_of_slot(t.region, i);
    ASSERT_LT(r, a.count);
    EXPECT_LT(i, t.result.range_end[r]);
    EXPECT_LE(r == 0 ? 0 : t.result.range_end[r - 1], i);
  }
}

INSTANTIATE_TEST_SUITE_P(KeySetsAndThresholds, EmbeddedTreeTest,
                         ::testing::Combine(::testing::Values("Urls", "Words", "RandomBytes",
                                                              "Prefixes", "OneKey", "TwoKeys",
                                                              "NoKeys"),
                                            ::testing::Values(1u, 2u, 8u, 32u, 128u)),
                         [](const auto& param_info) {
                           return std::get<0>(param_info.param) + "_" +
                                  std::to_string(std::get<1>(param_info.param));
                         });

TEST(EmbeddedTreeTest, SharedPrefixIsOneSpanNodeWithVirtualEdgesAroundIt) {
  const Keys keys = {"user:1", "user:2", "user:3"};
  const Built t = build_exact(keys, 32);
  const TreeShape s = shape(t.region);
  EXPECT_EQ(s.ranges, 1u);
  EXPECT_EQ(s.span_nodes, 1u);
  EXPECT_EQ(s.span_bytes, 5u);
  EXPECT_EQ(check_lookup(t.region, keys, "user:25").skip, 5);
  EXPECT_EQ(check_lookup(t.region, keys, "user:").skip, 5);       // ends with the span: matched
  EXPECT_EQ(check_lookup(t.region, keys, "user").skip, kNoSkip);  // ends inside: minimum edge
  EXPECT_EQ(check_lookup(t.region, keys, "a").skip, kNoSkip);
  EXPECT_EQ(check_lookup(t.region, keys, "usez").skip, kNoSkip);  // maximum edge
  EXPECT_EQ(check_lookup(t.region, keys, "zzz").end, 3);
}

// A prefix of up to 3 bytes is folded into the decision node, with the same virtual edges.
TEST(EmbeddedTreeTest, ShortSharedPrefixIsFoldedIntoTheDecisionNode) {
  const Keys keys = {"ab1", "ab2", "ab3"};
  const Built t = build_exact(keys, 32);
  const TreeShape s = shape(t.region);
  EXPECT_EQ(s.ranges, 1u);
  EXPECT_EQ(s.span_nodes, 0u);
  EXPECT_EQ(s.decision_nodes, 1u);
  EXPECT_EQ(s.prefix_bytes, 2u);
  EXPECT_EQ(t.result.bytes, 2u + 2u + 1u + 2u + 2u);  // count, bound, header, prefix, range
  EXPECT_EQ(check_lookup(t.region, keys, "ab25").skip, 2);
  EXPECT_EQ(check_lookup(t.region, keys, "ab").skip, 2);
  EXPECT_EQ(check_lookup(t.region, keys, "a").skip, kNoSkip);    // ends inside: minimum edge
  EXPECT_EQ(check_lookup(t.region, keys, "aa9").skip, kNoSkip);  // below
  EXPECT_EQ(check_lookup(t.region, keys, "ac").skip, kNoSkip);   // maximum edge
  EXPECT_EQ(check_lookup(t.region, keys, "ac").end, 3);
}

// A decision under a span decides at the byte after both the span and its own prefix.
TEST(EmbeddedTreeTest, SpanThenPrefixedDecisionsSplitTheRightByte) {
  Keys keys;
  for (const char* group : {"commonprefix/aa", "commonprefix/ab", "commonprefix/bc"})
    for (int i = 0; i < 40; ++i) keys.push_back(group + std::to_string(100 + i));
  const Built t = build_exact(keys, 32);
  const TreeShape s = shape(t.region);
  EXPECT_GE(s.span_nodes, 1u);
  EXPECT_GE(s.prefix_bytes, 1u);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const RangeHit h = check_lookup(t.region, keys, keys[i]);
    EXPECT_TRUE(h.begin <= i && i < h.end && h.skip != kNoSkip) << keys[i];
    EXPECT_LE(h.end - h.begin, 32);
  }
  for (const std::string& k : absent_keys(keys, 7)) check_lookup(t.region, keys, k);
}

// A decision's step compares 16 bytes at once where the region has them: it picks the same child
// as the byte loop for every key byte, separator count and separator bytes (sorted as a builder
// writes them, or any bytes, as a reader racing a writer may see).
TEST(EmbeddedTreeTest, WideSeparatorCompareAgreesWithTheByteLoop) {
  std::mt19937 rng(5);
  for (int round = 0; round < 200; ++round) {
    std::byte bytes[16];
    for (std::byte& b : bytes) b = static_cast<std::byte>(rng());
    if (round % 2 == 0) std::sort(std::begin(bytes), std::end(bytes));
    if (round == 0) std::fill(std::begin(bytes), std::end(bytes), std::byte{0xFF});
    if (round == 1) std::fill(std::begin(bytes), std::end(bytes), std::byte{0});
    for (unsigned count = 0; count <= 15; ++count) {
      for (unsigned k = 0; k < 256; ++k) {
        const auto byte = static_cast<std::uint8_t>(k);
        const unsigned loop = detail::first_at_or_above(bytes, count, count, byte);
        ASSERT_EQ(detail::first_at_or_above(bytes, 16, count, byte), loop)
            << "round " << round << " count " << count << " k " << k;
        unsigned expected = 0;
        while (expected < count && static_cast<std::uint8_t>(bytes[expected]) < byte) ++expected;
        ASSERT_EQ(loop, expected);
      }
    }
  }
}

TEST(EmbeddedTreeTest, BuildIsDeterministic) {
  const Keys& keys = key_set("Urls");
  EXPECT_EQ(build_exact(keys, 32).region, build_exact(keys, 32).region);
}

TEST(EmbeddedTreeTest, SmallBudgetGivesACoarserButCorrectTree) {
  const Keys& keys = key_set("Urls");
  const std::size_t full = build_exact(keys, 8).result.bytes;
  const Keys absent = absent_keys(Keys(keys.begin(), keys.begin() + 50), 9);
  std::size_t previous_ranges = 0;
  for (const std::size_t budget :
       {std::size_t{9}, std::size_t{40}, std::size_t{100}, std::size_t{300}, full / 2, full}) {
    SCOPED_TRACE(budget);
    const Built t = build_exact(keys, 8, budget);
    ASSERT_GT(t.result.bytes, 0u);
    EXPECT_LE(t.result.bytes, budget);
    EXPECT_GE(t.result.range_end.size(), previous_ranges);  // more room, finer ranges
    previous_ranges = t.result.range_end.size();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const RangeHit h = check_lookup(t.region, keys, keys[i]);
      EXPECT_TRUE(h.begin <= i && i < h.end && h.skip != kNoSkip) << i;
    }
    for (const std::string& k : absent) check_lookup(t.region, keys, k);
  }
  EXPECT_EQ(build_exact(keys, 8, 7).result.bytes, 7u);  // one range, no span
  EXPECT_EQ(build_exact(keys, 8, 6).result.bytes, 0u);  // not even that fits
}

// Ranges whose keys share bytes past the tree's decision (the path after a host's first byte)
// get them as unconfirmed prefixes, a byte per range, so that their heads tell the keys apart;
// keys whose heads already differ (random strings) get none, and no byte is spent on them.
TEST(EmbeddedTreeTest, UnconfirmedPrefixesAreWrittenWhereHeadsWouldTie) {
  Keys paths;
  for (char host = 'a'; host <= 'z'; ++host) {
    for (int i = 10; i < 30; ++i)
      paths.push_back(std::string(1, host) + "/usr/share/doc/pkg" + std::to_string(i) +
                      "/copyright");
  }
  std::sort(paths.begin(), paths.end());
  const Built with = build_exact(paths, 32, 32767, Unconfirmed::kPrefixes);
  const Built without = build_exact(paths, 32);
  const TreeShape s = shape(with.region);
  EXPECT_EQ(s.unconfirmed, s.ranges);
  EXPECT_EQ(with.region.size(), without.region.size() + s.ranges);
  for (const std::string& k : paths) {
    const RangeHit h = lookup(with.region, k, paths.size());
    EXPECT_EQ(h.skip, 0u);
    EXPECT_EQ(h.heads_at, std::string("a/usr/share/doc/pkg").size()) << k;
  }

  const Keys& random = key_set("RandomBytes");
  const Built random_with = build_exact(random, 32, 32767, Unconfirmed::kPrefixes);
  EXPECT_EQ(shape(random_with.region).unconfirmed, 0u);
  EXPECT_EQ(random_with.region, build_exact(random, 32).region);
}

TEST(EmbeddedTreeTest, EmptyPageHasOneEmptyRangeThatInsertsGrow) {
  Built t = build_exact(Keys{}, 32);
  EXPECT_EQ(t.result.range_end, std::vector<std::uint16_t>{0});
  const RangeHit h = lookup(t.region, "anything", 0);
  EXPECT_EQ(h.range, 0);
  EXPECT_EQ(h.begin, 0);
  EXPECT_EQ(h.end, 0);
  EXPECT_EQ(h.skip, 0);
  after_insert(t.region, 0, [&](std::size_t offset, std::uint16_t v) {
    std::memcpy(t.region.data() + offset, &v, 2);
  });
  EXPECT_EQ(lookup(t.region, "x", 1).end, 1);
}

// A page simulated as a sorted vector: inserts of keys whose lookup matched every span (so they
// share their range's prefix) into that range, erases from the slot's range; the invariant is
// checked after each change for every key and for absent ones.
TEST(EmbeddedTreeTest, InsertsAndErasesThroughTheRangeArrayKeepTheInvariant) {
  for (const char* set : {"Urls", "Words", "RandomBytes", "Prefixes"}) {
    SCOPED_TRACE(set);
    std::mt19937 rng(7);
    const Keys& all = key_set(set);
    Keys keys(all.begin(),
              all.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(all.size(), 200)));
    Built t = build_exact(keys, 16);
    const auto store = [&](std::size_t offset, std::uint16_t v) {
      std::memcpy(t.region.data() + offset, &v, 2);
    };
    const Keys candidates = absent_keys(keys, 11);
    std::size_t inserts = 0, erases = 0;
    for (int step = 0; step < 300; ++step) {
      if (rng() % 3 != 0 || keys.empty()) {
        const std::string& k = candidates[rng() % candidates.size()];
        const auto at = std::lower_bound(keys.begin(), keys.end(), k);
        if (at != keys.end() && *at == k) continue;
        const RangeHit h = lookup(t.region, k, keys.size());
        if (h.skip == kNoSkip) continue;  // off every span: the page would rebuild
        const auto index = static_cast<std::size_t>(at - keys.begin());
        ASSERT_TRUE(h.begin <= index && index <= h.end);
        keys.insert(at, k);
        after_insert(t.region, h.range, store);
        ++inserts;
      } else {
        const std::size_t index = rng() % keys.size();
        after_erase(t.region, range_of_slot(t.region, index), store);
        keys.erase(keys.begin() + static_cast<std::ptrdiff_t>(index));
        ++erases;
      }
      for (const std::string& k : keys) {
        const RangeHit h = check_lookup(t.region, keys, k);
        ASSERT_NE(h.skip, kNoSkip);
      }
      for (int i = 0; i < 20; ++i)
        check_lookup(t.region, keys, candidates[rng() % candidates.size()]);
      if (::testing::Test::HasFailure()) return;
    }
    EXPECT_GT(inserts, 50u);
    EXPECT_GT(erases, 50u);
  }
}

}  // namespace
}  // namespace pmcached::engine::b2tree

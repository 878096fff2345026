// Split points and separators: the shortest separator near the middle, halves that fit.
#include "engine/bptree/separator.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace pmcached::engine::bptree {
namespace {

TEST(SeparatorTest, ShortestSeparatorIsTheRightKeysPrefixOneBytePastTheCommonPart) {
  EXPECT_EQ(shortest_separator("apple", "banana"), "b");
  EXPECT_EQ(shortest_separator("user:1234", "user:1299"), "user:129");
  // The left key is a prefix of the right one.
  EXPECT_EQ(shortest_separator("abc", "abcd"), "abcd");
  EXPECT_EQ(shortest_separator("ab", "abcd"), "abc");
  // Zero bytes are ordinary bytes.
  EXPECT_EQ(shortest_separator(std::string("a\0\0", 3), std::string("a\0\1", 3)),
            std::string("a\0\1", 3));
  for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{
           {"a", "b"}, {"abc", "abd"}, {"x", "xy"}, {"k\xff", "l"}}) {
    const std::string_view s = shortest_separator(a, b);
    EXPECT_LT(a, s);
    EXPECT_LE(s, b);
  }
}

TEST(SeparatorTest, LeafSplitPrefersTheShortestSeparatorNearTheMiddle) {
  // 40 equal entries; keys share long prefixes except at one boundary just off the middle.
  std::vector<std::string> keys;
  for (int i = 0; i < 40; ++i) {
    std::string key(1, i < 22 ? 'a' : 'b');
    key.append(20, 'x');
    key += std::to_string(1000 + i);
    keys.push_back(key);
  }
  std::vector<std::size_t> sizes(keys.size(), 100);
  auto separator = [&](std::size_t k) { return shortest_separator(keys[k - 1], keys[k]).size(); };
  const std::size_t k = choose_split(sizes, 4000, false, separator);
  EXPECT_EQ(k, 22u);  // "b": one byte, two entries right of the middle
  EXPECT_EQ(separator(k), 1u);
}

TEST(SeparatorTest, LeafSplitStaysNearTheMiddleWhenTheShortSeparatorIsFar) {
  std::vector<std::string> keys;
  for (int i = 0; i < 40; ++i) {
    std::string key(1, i < 3 ? 'a' : 'b');
    key += std::to_string(1000 + i);
    keys.push_back(key);
  }
  std::vector<std::size_t> sizes(keys.size(), 100);
  auto separator = [&](std::size_t k) { return shortest_separator(keys[k - 1], keys[k]).size(); };
  const std::size_t k = choose_split(sizes, 4000, false, separator);
  EXPECT_GE(k, 16u);
  EXPECT_LE(k, 24u);
}

TEST(SeparatorTest, SplitBalancesBytesNotEntries) {
  // One large entry at the front: the byte middle is right after it.
  std::vector<std::size_t> sizes = {2000, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100};
  const std::size_t k = choose_split(sizes, 2100, false, [](std::size_t) { return 4; });
  EXPECT_EQ(k, 1u);
  // Both halves must fit: with capacity 1999 nothing does.
  EXPECT_EQ(choose_split(sizes, 1999, false, [](std::size_t) { return 4; }), 0u);
}

TEST(SeparatorTest, InnerSplitSendsOneEntryUp) {
  std::vector<std::size_t> sizes(5, 100);
  std::vector<std::size_t> separator_sizes = {9, 9, 3, 9, 9};
  const std::size_t k =
      choose_split(sizes, 1000, true, [&](std::size_t i) { return separator_sizes[i]; });
  EXPECT_EQ(k, 2u);  // left [0, 2), up 2, right [3, 5)
  EXPECT_EQ(
      choose_split(std::vector<std::size_t>(2, 100), 1000, true, [](std::size_t) { return 1; }),
      0u);
}

TEST(SeparatorTest, EdgeSplitsLeaveThePageBehindTheLoadNineTenthsFull) {
  // 41 entries of 100 bytes in pages of 4000: the left page keeps 3600 bytes, or the right one.
  const std::vector<std::size_t> sizes(41, 100);
  // A 1-byte separator next to the target does not move an edge split (it does a middle one).
  auto separator = [](std::size_t k) -> std::size_t { return k == 35 || k == 19 ? 1 : 9; };
  EXPECT_EQ(choose_split(sizes, 4000, false, separator, SplitAt::kLeftFull), 36u);
  EXPECT_EQ(choose_split(sizes, 4000, false, separator, SplitAt::kRightFull), 5u);
  EXPECT_EQ(choose_split(sizes, 4000, false, separator, SplitAt::kMiddle), 19u);
  // Inner: left [0, 18) keeps 3600 bytes, entry 18 goes up, the right page holds 19 and 20.
  EXPECT_EQ(choose_split(
                std::vector<std::size_t>(21, 200), 4000, true, [](std::size_t) { return 9; },
                SplitAt::kLeftFull),
            18u);
  // Both halves must fit: k = 2 is nearer 90% of 3600 bytes (3240) but its left half does not.
  EXPECT_EQ(choose_split(
                std::vector<std::size_t>{2000, 1700, 500}, 3600, false,
                [](std::size_t) { return 9; }, SplitAt::kLeftFull),
            1u);
}

TEST(SeparatorTest, OnlyAnEdgePageWithTheNewEntryInItsOuterHalfSplitsAtTheEdge) {
  // The last page of a level, the new entry at position 5 or later of 10 entries.
  EXPECT_EQ(split_direction(false, true, 9, 10), SplitAt::kLeftFull);
  EXPECT_EQ(split_direction(false, true, 5, 10), SplitAt::kLeftFull);
  EXPECT_EQ(split_direction(false, true, 4, 10), SplitAt::kMiddle);
  // The first page, the new entry before position 5.
  EXPECT_EQ(split_direction(true, false, 0, 10), SplitAt::kRightFull);
  EXPECT_EQ(split_direction(true, false, 4, 10), SplitAt::kRightFull);
  EXPECT_EQ(split_direction(true, false, 5, 10), SplitAt::kMiddle);
  // The only page of its level (the root): the new entry's half decides.
  EXPECT_EQ(split_direction(true, true, 9, 10), SplitAt::kLeftFull);
  EXPECT_EQ(split_direction(true, true, 0, 10), SplitAt::kRightFull);
  // Every other page splits in the middle.
  EXPECT_EQ(split_direction(false, false, 0, 10), SplitAt::kMiddle);
  EXPECT_EQ(split_direction(false, false, 9, 10), SplitAt::kMiddle);
}

}  // namespace
}  // namespace pmcached::engine::bptree

// The embedded tree's size on full pages of URL-like and title-like keys (seed 004 §4.6: under
// 0.5% of a 64 KiB page on average). Pages are runs of consecutive sorted keys filled as a
// bptree leaf would be: 12-byte slot, the key and an 8-byte payload per entry, after a 40-byte
// node header. The figures go to the test's output and its XML properties.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/b2tree/embedded_tree.h"
#include "tests/b2tree/tree_fixture.h"

namespace pmcached::engine::b2tree {
namespace {

using testing::Keys;

struct Space {
  double mean = 0;
  std::size_t max = 0;
  std::size_t pages = 0;
};

Space tree_space(const Keys& keys, std::size_t page_size, unsigned threshold) {
  Space s;
  std::size_t total = 0;
  for (std::size_t begin = 0; begin < keys.size();) {
    std::size_t end = begin, used = 40;
    while (end < keys.size() && used + 12 + keys[end].size() + 8 <= page_size)
      used += 12 + keys[end++].size() + 8;
    if (end == keys.size()) break;  // the last page is partly filled: leave it out
    const Keys page(keys.begin() + static_cast<std::ptrdiff_t>(begin),
                    keys.begin() + static_cast<std::ptrdiff_t>(end));
    const std::size_t bytes = testing::build_exact(page, threshold).result.bytes;
    total += bytes;
    s.max = std::max(s.max, bytes);
    ++s.pages;
    begin = end;
  }
  s.mean = s.pages == 0 ? 0 : static_cast<double>(total) / static_cast<double>(s.pages);
  return s;
}

void report(const char* name, const Space& s, std::size_t page_size) {
  std::printf("%s, %zu-byte pages: %zu pages, tree mean %.1f bytes (%.3f%%), max %zu (%.3f%%)\n",
              name, page_size, s.pages, s.mean, 100.0 * s.mean / static_cast<double>(page_size),
              s.max, 100.0 * static_cast<double>(s.max) / static_cast<double>(page_size));
  ::testing::Test::RecordProperty(std::string(name) + "_" + std::to_string(page_size) + "_mean",
                                  std::to_string(s.mean));
}

TEST(EmbeddedTreeSpaceTest, UrlPagesOf64KiBKeepTheTreeUnderHalfAPercent) {
  const Keys keys = testing::url_keys(8000, 21);
  const Space s = tree_space(keys, 65536, kDefaultThreshold);
  report("urls", s, 65536);
  ASSERT_GE(s.pages, 4u);
  EXPECT_LE(s.mean, 0.005 * 65536);
  report("urls", tree_space(keys, 16384, kDefaultThreshold), 16384);
}

TEST(EmbeddedTreeSpaceTest, TitlePagesOf64KiBKeepTheTreeUnderHalfAPercent) {
  const Keys keys = testing::word_keys(12000, 22);
  const Space s = tree_space(keys, 65536, kDefaultThreshold);
  report("titles", s, 65536);
  ASSERT_GE(s.pages, 4u);
  EXPECT_LE(s.mean, 0.005 * 65536);
  report("titles", tree_space(keys, 16384, kDefaultThreshold), 16384);
}

}  // namespace
}  // namespace pmcached::engine::b2tree

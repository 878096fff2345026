#include "engine/buffer/page_changes.h"

#include <vector>

#include <gtest/gtest.h>

namespace pmcached::buffer {
namespace {

TEST(PageChangesTest, AppliesWritesAndRemembersMergedRanges) {
  std::vector<std::byte> page(4096);
  PageChanges changes(7, page.data(), page.size());
  const char text[] = "abcd";
  changes.write(100, text, 4);
  changes.write(110, text, 4);  // within kMergeGap of the first: merged
  changes.write(1000, text, 4);
  EXPECT_EQ(page[100], std::byte{'a'});
  ASSERT_EQ(changes.ranges().size(), 2u);
  EXPECT_EQ(changes.ranges()[0].offset, 100u);
  EXPECT_EQ(changes.ranges()[0].length, 14u);
  EXPECT_EQ(changes.ranges()[1].offset, 1000u);
  changes.move(500, 100, 14);  // a middle range, kept sorted
  ASSERT_EQ(changes.ranges().size(), 3u);
  EXPECT_EQ(changes.ranges()[1].offset, 500u);
  EXPECT_EQ(page[500], std::byte{'a'});
  changes.fill(90, std::byte{0}, 1000);  // swallows all three
  ASSERT_EQ(changes.ranges().size(), 1u);
  EXPECT_EQ(changes.ranges()[0].offset, 90u);
  EXPECT_EQ(changes.ranges()[0].length, 1000u);
  EXPECT_EQ(changes.changed_bytes(), 1000u);
}

TEST(PageChangesTest, NeverRecordsThePageHeader) {
  std::vector<std::byte> page(4096);
  PageChanges changes(1, page.data(), page.size());
  changes.store<std::uint64_t>(0, 5);
  EXPECT_TRUE(changes.empty());
  changes.fill(8, std::byte{1}, 16);  // [8, 24): only [16, 24) is the engine's
  ASSERT_EQ(changes.ranges().size(), 1u);
  EXPECT_EQ(changes.ranges()[0].offset, kPageHeaderSize);
  EXPECT_EQ(changes.ranges()[0].length, 8u);
  changes.mark_whole();
  EXPECT_TRUE(changes.whole());
  EXPECT_EQ(changes.changed_bytes(), 4096 - kPageHeaderSize);
}

}  // namespace
}  // namespace pmcached::buffer

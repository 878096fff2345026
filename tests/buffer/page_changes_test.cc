#include "engine/buffer/page_changes.h"

#include <cstring>
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

// A shift of untouched bytes is remembered as a move (a few bytes in the log); replaying the moves
// in order and then the ranges gives the page back.
TEST(PageChangesTest, RemembersAShiftOfUntouchedBytesAsAMove) {
  std::vector<std::byte> page(4096);
  for (std::size_t i = 0; i < page.size(); ++i) page[i] = static_cast<std::byte>(i * 7);
  const std::vector<std::byte> before = page;
  PageChanges changes(7, page.data(), page.size());
  changes.move(212, 200, 1200);  // a slot array shifted by one 12-byte slot
  const char slot[12] = "new slot...";
  changes.write(200, slot, 12);
  changes.move(2000, 3000, 500);
  ASSERT_EQ(changes.moves().size(), 2u);
  EXPECT_EQ(changes.moves()[0].to, 212u);
  EXPECT_EQ(changes.moves()[0].from, 200u);
  EXPECT_EQ(changes.moves()[0].length, 1200u);
  ASSERT_EQ(changes.ranges().size(), 1u);
  EXPECT_EQ(changes.changed_bytes(), 12u);
  std::vector<std::byte> replayed = before;
  for (const ByteMove& m : changes.moves()) {
    std::memmove(replayed.data() + m.to, replayed.data() + m.from, m.length);
  }
  for (const ByteRange& r : changes.ranges()) {
    std::memcpy(replayed.data() + r.offset, page.data() + r.offset, r.length);
  }
  EXPECT_EQ(replayed, page);
}

// A move whose source was written earlier in the command cannot be replayed before the ranges:
// its destination is logged as a range.
TEST(PageChangesTest, AMoveOfBytesWrittenBeforeBecomesARange) {
  std::vector<std::byte> page(4096);
  PageChanges changes(7, page.data(), page.size());
  const char text[] = "abcd";
  changes.write(600, text, 4);
  changes.move(1000, 590, 20);  // reads [600, 604), written above
  EXPECT_TRUE(changes.moves().empty());
  ASSERT_EQ(changes.ranges().size(), 2u);
  EXPECT_EQ(changes.ranges()[1].offset, 1000u);
  EXPECT_EQ(changes.ranges()[1].length, 20u);
  changes.move(8, 2000, 16);  // into the buffer manager's header: a range, clipped
  EXPECT_TRUE(changes.moves().empty());
  EXPECT_FALSE(changes.empty());
}

}  // namespace
}  // namespace pmcached::buffer

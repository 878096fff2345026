// ExtendibleHashTable: lookups through splits and directory doublings, erase, probe counts, and
// lock-free lookups racing inserts and erases (run under TSan too).
#include "engine/buffer/extendible_hash_table.h"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace pmcached::buffer {
namespace {

FrameId frame_for(PageId page) { return static_cast<FrameId>(page * 7 % 1000003); }

TEST(ExtendibleHashTableTest, FindsEveryPageThroughSplitsAndDoublings) {
  ExtendibleHashTable table;
  EXPECT_EQ(table.global_depth(), 0u);
  EXPECT_EQ(table.bucket_count(), 1u);
  constexpr PageId kPages = 5000;
  for (PageId p = 1; p <= kPages; ++p) ASSERT_EQ(table.insert(p, frame_for(p)), frame_for(p));
  EXPECT_EQ(table.size(), kPages);
  // Full buckets of 8 split on overflow: at least kPages / 8 buckets, a directory at least that
  // large, and (with a good hash) not wildly larger.
  EXPECT_GE(table.bucket_count(), kPages / ExtendibleHashTable::kBucketSlots);
  EXPECT_GE(std::size_t{1} << table.global_depth(), table.bucket_count());
  EXPECT_LE(table.global_depth(), 14u);
  std::uint64_t probes = 0;
  for (PageId p = 1; p <= kPages; ++p) ASSERT_EQ(table.lookup(p, probes), frame_for(p)) << p;
  EXPECT_EQ(table.lookup(kPages + 1, probes), kNoFrame);
  EXPECT_EQ(table.lookup(kNoPage, probes), kNoFrame);
}

TEST(ExtendibleHashTableTest, InsertOfAPresentPageKeepsItsFrame) {
  ExtendibleHashTable table;
  EXPECT_EQ(table.insert(42, 3), 3u);
  EXPECT_EQ(table.insert(42, 9), 3u);
  EXPECT_EQ(table.size(), 1u);
}

TEST(ExtendibleHashTableTest, EraseRemovesOnlyTheGivenMapping) {
  ExtendibleHashTable table;
  for (PageId p = 1; p <= 100; ++p) table.insert(p, frame_for(p));
  EXPECT_FALSE(table.erase(50, frame_for(50) + 1));  // another frame: kept
  EXPECT_FALSE(table.erase(500, 0));
  for (PageId p = 1; p <= 100; p += 2) EXPECT_TRUE(table.erase(p, frame_for(p)));
  std::uint64_t probes = 0;
  for (PageId p = 1; p <= 100; ++p) {
    EXPECT_EQ(table.lookup(p, probes), p % 2 == 1 ? kNoFrame : frame_for(p)) << p;
  }
  EXPECT_EQ(table.size(), 50u);
  // Room left by erase is reused: no new bucket for the same pages again.
  const std::size_t buckets = table.bucket_count();
  for (PageId p = 1; p <= 100; p += 2) table.insert(p, frame_for(p));
  EXPECT_EQ(table.bucket_count(), buckets);
}

TEST(ExtendibleHashTableTest, ProbesCountTheEntriesCompared) {
  ExtendibleHashTable table;
  for (PageId p = 1; p <= 5; ++p) table.insert(p, frame_for(p));  // one bucket, in order
  std::uint64_t probes = 0;
  (void)table.lookup(1, probes);
  EXPECT_EQ(probes, 1u);
  (void)table.lookup(5, probes);
  EXPECT_EQ(probes, 1u + 5u);
  (void)table.lookup(99, probes);  // a miss compares the whole bucket
  EXPECT_EQ(probes, 1u + 5u + 5u);
}

// Readers look up pages that stay while a writer inserts and erases others (splitting and
// doubling as it goes): a stable page is always found with its frame; a churned page is either
// absent or found with its own frame, never another page's.
TEST(ExtendibleHashTableTest, LockFreeLookupsRaceInsertsAndErases) {
  ExtendibleHashTable table;
  constexpr PageId kStable = 200;
  for (PageId p = 1; p <= kStable; ++p) table.insert(p, frame_for(p));
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> wrong{0};
  auto reader = [&](PageId seed) {
    std::uint64_t probes = 0;
    PageId p = seed;
    while (!done.load(std::memory_order_acquire)) {
      p = p * 6364136223846793005ull + 1442695040888963407ull;
      const PageId stable = 1 + (p >> 33) % kStable;
      if (table.lookup(stable, probes) != frame_for(stable)) wrong.fetch_add(1);
      const PageId churned = kStable + 1 + (p >> 20) % 3000;
      const FrameId f = table.lookup(churned, probes);
      if (f != kNoFrame && f != frame_for(churned)) wrong.fetch_add(1);
    }
  };
  std::thread r1(reader, 1);
  std::thread r2(reader, 2);
  for (int round = 0; round < 20; ++round) {
    for (PageId p = kStable + 1; p <= kStable + 3000; ++p) table.insert(p, frame_for(p));
    for (PageId p = kStable + 1; p <= kStable + 3000; ++p) table.erase(p, frame_for(p));
  }
  done.store(true, std::memory_order_release);
  r1.join();
  r2.join();
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_EQ(table.size(), kStable);
}

}  // namespace
}  // namespace pmcached::buffer

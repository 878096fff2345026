// Allocator: sizes, no overlap against a model, heap full, rebuild, durability of headers.
#include "engine/pm/allocator.h"

#include <cstring>
#include <map>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "engine/pm/crash_simulator.h"

namespace pmcached::pm {
namespace {

constexpr std::uint64_t kHeapBegin = 4096;

std::uint64_t heap_end_of(std::size_t chunks) { return kHeapBegin + chunks * kLegacyChunkSize; }

// Live blocks: offset -> usable size. Checks that a new block overlaps none of them.
class Model {
 public:
  void add(std::uint64_t offset, std::size_t size) {
    auto next = blocks_.lower_bound(offset);
    if (next != blocks_.end()) {
      ASSERT_LE(offset + size, next->first) << "overlaps the next block";
    }
    if (next != blocks_.begin()) {
      auto prev = std::prev(next);
      ASSERT_LE(prev->first + prev->second, offset) << "overlaps the previous block";
    }
    blocks_[offset] = size;
  }
  void remove(std::uint64_t offset) { blocks_.erase(offset); }
  [[nodiscard]] const std::map<std::uint64_t, std::size_t>& blocks() const { return blocks_; }
  [[nodiscard]] std::uint64_t bytes() const {
    std::uint64_t total = 0;
    for (const auto& [offset, size] : blocks_) total += size;
    return total;
  }

 private:
  std::map<std::uint64_t, std::size_t> blocks_;
};

TEST(Allocator, AllocatesAndFreesSizesFromOneByteToOneMiB) {
  auto region = PmRegion::in_memory(heap_end_of(16));
  Allocator allocator(*region, kHeapBegin, region->size());
  for (std::size_t size :
       {std::size_t{1}, std::size_t{16}, std::size_t{63}, std::size_t{64}, std::size_t{65},
        std::size_t{100}, std::size_t{1000}, std::size_t{4096}, kMaxSmallBlock - 1, kMaxSmallBlock,
        kMaxSmallBlock + 1, std::size_t{100000}, kLegacyChunkSize - kChunkHeaderSize,
        kLegacyChunkSize - kChunkHeaderSize + 1, std::size_t{1} << 20}) {
    const std::uint64_t offset = allocator.allocate(size);
    ASSERT_NE(offset, 0u) << size;
    const std::size_t usable = allocator.block_size(offset);
    EXPECT_GE(usable, size);
    EXPECT_EQ(offset % 16, 0u);
    ASSERT_GE(offset, kHeapBegin);
    ASSERT_LE(offset + usable, region->size());
    std::memset(region->base() + offset, 0xab, size);
    EXPECT_EQ(allocator.stats().blocks_in_use, 1u);
    EXPECT_EQ(allocator.stats().bytes_in_use, usable);
    allocator.free(offset);
    EXPECT_EQ(allocator.stats().blocks_in_use, 0u) << size;
    EXPECT_EQ(allocator.stats().bytes_in_use, 0u);
    EXPECT_EQ(allocator.stats().chunks_in_use, 0u);
  }
  EXPECT_EQ(allocator.stats().chunks_total, 16u);
  EXPECT_EQ(allocator.stats().heap_bytes, 16 * kLegacyChunkSize);
}

TEST(Allocator, SmallSizeClassesWasteAtMostAQuarter) {
  auto region = PmRegion::in_memory(heap_end_of(64));
  Allocator allocator(*region, kHeapBegin, region->size());
  for (std::size_t size = 64; size <= kMaxSmallBlock; size = size * 9 / 8) {
    const std::uint64_t offset = allocator.allocate(size);
    ASSERT_NE(offset, 0u);
    EXPECT_LE(allocator.block_size(offset), size * 5 / 4 + 16) << size;
    allocator.free(offset);
  }
}

TEST(Allocator, RandomisedAllocateFreeNeverOverlaps) {
  auto region = PmRegion::in_memory(heap_end_of(48));
  Allocator allocator(*region, kHeapBegin, region->size());
  Model model;
  std::mt19937_64 rng(12345);
  std::vector<std::uint64_t> live;
  for (int step = 0; step < 20000; ++step) {
    const bool do_free = !live.empty() && (rng() % 100 < 45);
    if (do_free) {
      const std::size_t i = rng() % live.size();
      const std::uint64_t offset = live[i];
      // The block's tag survived every other allocation: nothing overlapped it.
      const auto tag = static_cast<char>(offset >> 4);
      const std::size_t size = model.blocks().at(offset);
      ASSERT_EQ(region->base()[offset], tag);
      ASSERT_EQ(region->base()[offset + size - 1], tag);
      allocator.free(offset);
      model.remove(offset);
      live[i] = live.back();
      live.pop_back();
    } else {
      const std::size_t size = rng() % 100 < 95 ? 1 + rng() % 2000
                               : rng() % 2      ? 1 + rng() % kMaxSmallBlock
                                                : 1 + rng() % (600 * 1024);
      const std::uint64_t offset = allocator.allocate(size);
      if (offset == 0) continue;  // the heap is full for this size
      const std::size_t usable = allocator.block_size(offset);
      ASSERT_GE(usable, size);
      ASSERT_LE(offset + usable, region->size());
      model.add(offset, usable);
      if (HasFatalFailure()) return;
      const auto tag = static_cast<char>(offset >> 4);
      region->base()[offset] = tag;
      region->base()[offset + usable - 1] = tag;
      live.push_back(offset);
    }
    ASSERT_EQ(allocator.stats().blocks_in_use, live.size());
    ASSERT_EQ(allocator.stats().bytes_in_use, model.bytes());
  }
}

TEST(Allocator, FullHeapReturnsZeroUntilSomethingIsFreed) {
  auto region = PmRegion::in_memory(heap_end_of(4));
  Allocator allocator(*region, kHeapBegin, region->size());
  std::vector<std::uint64_t> blocks;
  for (std::uint64_t offset; (offset = allocator.allocate(64)) != 0;) blocks.push_back(offset);
  EXPECT_EQ(blocks.size(), 4 * ((kLegacyChunkSize - kChunkHeaderSize) / 64));
  EXPECT_EQ(allocator.allocate(1), 0u);
  EXPECT_EQ(allocator.allocate(kLegacyChunkSize), 0u);
  allocator.free(blocks[17]);
  EXPECT_EQ(allocator.allocate(50), blocks[17]);
  EXPECT_EQ(allocator.allocate(100), 0u);  // no free chunk for another size class
  EXPECT_EQ(allocator.stats().chunks_in_use, 4u);
}

TEST(Allocator, LargeRequestNeedsConsecutiveChunks) {
  auto region = PmRegion::in_memory(heap_end_of(4));
  Allocator allocator(*region, kHeapBegin, region->size());
  EXPECT_EQ(allocator.allocate(4 * kLegacyChunkSize), 0u);  // larger than the heap with its header
  const std::uint64_t all = allocator.allocate(4 * kLegacyChunkSize - kChunkHeaderSize);
  ASSERT_NE(all, 0u);
  EXPECT_EQ(allocator.stats().chunks_in_use, 4u);
  allocator.free(all);
  // Occupy chunk 1 (the second): no run of 3 remains, a run of 2 does (chunks 2 and 3).
  const std::uint64_t a = allocator.allocate(64);
  const std::uint64_t b = allocator.allocate(200);
  ASSERT_EQ(a, kHeapBegin + kChunkHeaderSize);
  ASSERT_EQ(b, kHeapBegin + kLegacyChunkSize + kChunkHeaderSize);
  allocator.free(a);  // chunk 0 is free again
  EXPECT_EQ(allocator.allocate(3 * kLegacyChunkSize - 2 * kChunkHeaderSize), 0u);
  EXPECT_EQ(allocator.allocate(2 * kLegacyChunkSize - kChunkHeaderSize),
            kHeapBegin + 2 * kLegacyChunkSize + kChunkHeaderSize);
}

TEST(Allocator, FreedChunkServesAnotherSizeClass) {
  auto region = PmRegion::in_memory(heap_end_of(1));
  Allocator allocator(*region, kHeapBegin, region->size());
  const std::uint64_t small = allocator.allocate(64);
  ASSERT_NE(small, 0u);
  EXPECT_EQ(allocator.allocate(1000), 0u);
  allocator.free(small);
  EXPECT_NE(allocator.allocate(1000), 0u);
}

// Allocates a mix of blocks, keeps a random subset "reachable", rebuilds a new allocator over
// the same memory from that subset.
TEST(Allocator, RebuildFreesExactlyTheUnmarkedBlocks) {
  auto region = PmRegion::in_memory(heap_end_of(64));
  std::vector<std::uint64_t> kept;
  std::uint64_t kept_bytes = 0;
  {
    Allocator before(*region, kHeapBegin, region->size());
    std::mt19937_64 rng(99);
    for (int i = 0; i < 3000; ++i) {
      const std::size_t size = i % 500 == 0 ? 300000 : 1 + rng() % 3000;
      const std::uint64_t offset = before.allocate(size);
      ASSERT_NE(offset, 0u);
      if (rng() % 3 == 0) {
        kept.push_back(offset);
        kept_bytes += before.block_size(offset);
      }
    }
  }
  Allocator after(*region, kHeapBegin, region->size());
  after.begin_rebuild();
  for (std::uint64_t offset : kept) ASSERT_TRUE(after.mark_reachable(offset)) << offset;
  after.finish_rebuild();
  EXPECT_EQ(after.stats().blocks_in_use, kept.size());
  EXPECT_EQ(after.stats().bytes_in_use, kept_bytes);
  // Fill the heap: every new block avoids the kept ones, and the kept ones free cleanly.
  Model model;
  for (std::uint64_t offset : kept) model.add(offset, after.block_size(offset));
  for (std::size_t size : {std::size_t{40}, std::size_t{700}, std::size_t{2900}}) {
    for (std::uint64_t offset; (offset = after.allocate(size)) != 0;) {
      model.add(offset, after.block_size(offset));
      if (HasFatalFailure()) return;
    }
  }
  for (const auto& [offset, size] : model.blocks()) after.free(offset);
  EXPECT_EQ(after.stats().blocks_in_use, 0u);
  EXPECT_EQ(after.stats().chunks_in_use, 0u);
}

TEST(Allocator, MarkReachableRejectsBadOffsets) {
  auto region = PmRegion::in_memory(heap_end_of(8));
  std::uint64_t small = 0;
  std::uint64_t large = 0;
  {
    Allocator before(*region, kHeapBegin, region->size());
    small = before.allocate(100);
    large = before.allocate(2 * kLegacyChunkSize);
    ASSERT_NE(small, 0u);
    ASSERT_NE(large, 0u);
  }
  Allocator after(*region, kHeapBegin, region->size());
  after.begin_rebuild();
  const std::size_t small_size = 112;
  EXPECT_FALSE(after.mark_reachable(0));
  EXPECT_FALSE(after.mark_reachable(kHeapBegin));                         // a chunk header
  EXPECT_FALSE(after.mark_reachable(small + 8));                          // inside a block
  EXPECT_FALSE(after.mark_reachable(large + kLegacyChunkSize));           // inside a large block
  EXPECT_FALSE(after.mark_reachable(large - kChunkHeaderSize));           // its header
  EXPECT_FALSE(after.mark_reachable(region->size() + 64));                // beyond the heap
  EXPECT_FALSE(after.mark_reachable(heap_end_of(7) + kChunkHeaderSize));  // unassigned chunk
  // The last block slot of the small chunk exists; one past it does not.
  const std::uint64_t slots = (kLegacyChunkSize - kChunkHeaderSize) / small_size;
  EXPECT_TRUE(after.mark_reachable(small + (slots - 1) * small_size));
  EXPECT_FALSE(after.mark_reachable(small + slots * small_size));
  EXPECT_TRUE(after.mark_reachable(small));
  EXPECT_FALSE(after.mark_reachable(small));  // already marked
  EXPECT_TRUE(after.mark_reachable(large));
  EXPECT_FALSE(after.mark_reachable(large));
  after.finish_rebuild();
  EXPECT_EQ(after.stats().blocks_in_use, 3u);
}

// Rebuilds an allocator from `image` and marks `live`; every mark must succeed.
void expect_rebuildable(const std::vector<char>& image, const std::vector<std::uint64_t>& live) {
  auto restarted = PmRegion::from_image(image);
  Allocator allocator(*restarted, kHeapBegin, restarted->size());
  allocator.begin_rebuild();
  for (std::uint64_t offset : live) {
    ASSERT_TRUE(allocator.mark_reachable(offset)) << "block " << offset << " lost its chunk";
  }
  allocator.finish_rebuild();
  ASSERT_EQ(allocator.stats().blocks_in_use, live.size());
}

TEST(Allocator, ChunkHeaderIsDurableBeforeItsBlockIsReturned) {
  const std::size_t size = heap_end_of(10);
  CrashSimulator sim(size);
  auto region = PmRegion::in_memory(size, &sim);
  Allocator allocator(*region, kHeapBegin, size);
  std::mt19937_64 rng(5);
  std::vector<std::uint64_t> live;
  for (int step = 0; step < 300; ++step) {
    if (!live.empty() && rng() % 100 < 40) {
      const std::size_t i = rng() % live.size();
      allocator.free(live[i]);
      live[i] = live.back();
      live.pop_back();
    } else {
      const std::size_t size_wanted =
          rng() % 10 == 0 ? 1 + rng() % (3 * kLegacyChunkSize) : 1 + rng() % kMaxSmallBlock;
      const std::uint64_t offset = allocator.allocate(size_wanted);
      if (offset == 0) continue;
      // Block data written without persisting: a crash image never needs it.
      std::memset(region->base() + offset, 0x5a, allocator.block_size(offset));
      live.push_back(offset);
    }
    expect_rebuildable(sim.image(), live);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(sim.persistence_points(), 0u);
}

// A large block's data may contain bytes that look like a chunk header (a client can store
// anything). Once the block is freed, or dropped by a rebuild, such bytes must never be read
// as a header that claims chunks in use.
TEST(Allocator, FreedLargeBlockDataIsNeverReadAsAHeader) {
  for (bool drop_by_rebuild : {false, true}) {
    auto region = PmRegion::in_memory(heap_end_of(6));
    Allocator allocator(*region, kHeapBegin, region->size());
    const std::uint64_t a = allocator.allocate(64);  // chunk 0
    const std::uint64_t large =
        allocator.allocate(3 * kLegacyChunkSize - kChunkHeaderSize);  // 1..3
    ASSERT_EQ(large, kHeapBegin + kLegacyChunkSize + kChunkHeaderSize);
    // Plant a copy of the run's own header at the start of its second chunk (block data).
    std::memcpy(region->base() + large + kLegacyChunkSize - kChunkHeaderSize,
                region->base() + large - kChunkHeaderSize, kChunkHeaderSize);
    const std::uint64_t b = allocator.allocate(200);  // chunk 4
    ASSERT_EQ(b, kHeapBegin + 4 * kLegacyChunkSize + kChunkHeaderSize);
    if (drop_by_rebuild) {
      allocator.begin_rebuild();
      ASSERT_TRUE(allocator.mark_reachable(a));
      ASSERT_TRUE(allocator.mark_reachable(b));
      allocator.finish_rebuild();  // the unreachable large block is dropped
    } else {
      allocator.free(large);
    }
    const std::vector<char> image(region->base(), region->base() + region->size());
    expect_rebuildable(image, {a, b});
    if (HasFatalFailure()) return;
  }
}

TEST(Allocator, ConcurrentAllocateAndFree) {
  auto region = PmRegion::in_memory(heap_end_of(32));
  Allocator allocator(*region, kHeapBegin, region->size());
  auto worker = [&](unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<std::uint64_t> mine;
    for (int i = 0; i < 5000; ++i) {
      if (!mine.empty() && rng() % 2 == 0) {
        ASSERT_EQ(region->base()[mine.back()], static_cast<char>(seed));
        allocator.free(mine.back());
        mine.pop_back();
      } else if (const std::uint64_t offset = allocator.allocate(1 + rng() % 1000)) {
        region->base()[offset] = static_cast<char>(seed);
        mine.push_back(offset);
      }
    }
    for (std::uint64_t offset : mine) allocator.free(offset);
  };
  std::thread a(worker, 1);
  std::thread b(worker, 2);
  a.join();
  b.join();
  EXPECT_EQ(allocator.stats().blocks_in_use, 0u);
}

}  // namespace
}  // namespace pmcached::pm

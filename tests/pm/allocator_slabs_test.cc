// Allocator with layout 2's geometry (HeapGeometry::slabs): memcached's item classes in 1 MiB
// chunks with a header table, index nodes in their own classes, rebuild and crash safety.
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "engine/pm/allocator.h"
#include "engine/pm/crash_simulator.h"

namespace pmcached::pm {
namespace {

constexpr std::uint64_t kSlabHeapBegin = 4096;
constexpr std::uint64_t kSlabChunk = 1u << 20;

// A heap of `chunks` 1 MiB chunks and their (one page of) header table.
std::uint64_t slab_heap_end_of(std::size_t chunks) {
  return kSlabHeapBegin + 4096 + chunks * kSlabChunk;
}

Allocator slab_allocator(PmRegion& region, std::uint64_t end) {
  return Allocator(region, kSlabHeapBegin, end, HeapGeometry::slabs(SlabSettings{}));
}

TEST(AllocatorSlabs, ChunksHoldExactlyMemcachedsChunksPerPage) {
  auto region = PmRegion::in_memory(slab_heap_end_of(2));
  Allocator allocator = slab_allocator(*region, region->size());
  EXPECT_EQ(allocator.stats().chunks_total, 2u);
  // 96-byte class: 10922 per 1 MiB page (memcached's perslab); the first block starts the first
  // chunk, right after the header table.
  const std::uint64_t first = allocator.allocate(70);
  EXPECT_EQ(first, kSlabHeapBegin + 4096);
  EXPECT_EQ(allocator.block_size(first), 96u);
  for (int i = 1; i < 10922; ++i) ASSERT_EQ(allocator.allocate(96), first + 96u * i);
  EXPECT_EQ(allocator.stats().chunks_in_use, 1u);
  const std::uint64_t next = allocator.allocate(96);
  EXPECT_EQ(next, first + kSlabChunk);  // a second page
  const std::vector<ClassUsage> usage = allocator.item_class_usage();
  ASSERT_EQ(usage.size(), 40u);  // 39 classes and the large runs
  EXPECT_EQ(usage[0].block_size, 96u);
  EXPECT_EQ(usage[0].blocks_per_chunk, 10922u);
  EXPECT_EQ(usage[0].chunks, 2u);
  EXPECT_EQ(usage[0].blocks_in_use, 10923u);
  EXPECT_EQ(usage[1].blocks_per_chunk, 8738u);
  EXPECT_EQ(usage[38].block_size, 524288u);
  EXPECT_EQ(usage[38].blocks_per_chunk, 2u);
}

TEST(AllocatorSlabs, ItemClassesAreMemcachedsAndIndexNodesKeepTheirOwn) {
  auto region = PmRegion::in_memory(slab_heap_end_of(4));
  Allocator allocator = slab_allocator(*region, region->size());
  EXPECT_EQ(allocator.class_count(), 40u);
  EXPECT_EQ(allocator.size_class(70), 0u);       // memcached class 1
  EXPECT_EQ(allocator.size_class(264), 5u);      // class 6 (304)
  EXPECT_EQ(allocator.size_class(524288), 38u);  // class 39
  EXPECT_EQ(allocator.size_class(524289), 39u);  // a large run
  EXPECT_EQ(allocator.rounded_size(97), 120u);
  EXPECT_EQ(allocator.rounded_size(524289), kSlabChunk);  // one whole chunk, no header inside
  const std::uint64_t node = allocator.allocate(64, BlockUse::kIndex);
  EXPECT_EQ(allocator.block_size(node), 64u);
  const std::uint64_t item = allocator.allocate(64);
  EXPECT_EQ(allocator.block_size(item), 96u);
  EXPECT_NE(node / kSlabChunk, item / kSlabChunk) << "items and index nodes share a chunk";
}

TEST(AllocatorSlabs, LargeRunsTakeWholeChunks) {
  auto region = PmRegion::in_memory(slab_heap_end_of(4));
  Allocator allocator = slab_allocator(*region, region->size());
  const std::uint64_t one = allocator.allocate(kSlabChunk);
  ASSERT_NE(one, 0u);
  EXPECT_EQ(allocator.block_size(one), kSlabChunk);
  const std::uint64_t two = allocator.allocate(kSlabChunk + 1);
  ASSERT_NE(two, 0u);
  EXPECT_EQ(allocator.block_size(two), 2 * kSlabChunk);
  EXPECT_EQ(allocator.allocate(2 * kSlabChunk), 0u);  // one chunk left
  EXPECT_EQ(allocator.item_class_usage().back().chunks, 3u);
  EXPECT_EQ(allocator.item_class_usage().back().blocks_in_use, 2u);
  allocator.free(two);
  EXPECT_NE(allocator.allocate(2 * kSlabChunk), 0u);
}

TEST(AllocatorSlabs, RebuildKeepsMarkedItemsAndIndexNodes) {
  auto region = PmRegion::in_memory(slab_heap_end_of(64));
  std::vector<std::pair<std::uint64_t, BlockUse>> kept;
  {
    Allocator before = slab_allocator(*region, region->size());
    std::mt19937_64 rng(7);
    for (int i = 0; i < 2000; ++i) {
      const BlockUse use = rng() % 3 == 0 ? BlockUse::kIndex : BlockUse::kItem;
      const std::size_t size = i % 400 == 0 ? 700000 : 1 + rng() % 5000;
      const std::uint64_t offset = before.allocate(size, use);
      ASSERT_NE(offset, 0u);
      if (rng() % 2 == 0) kept.emplace_back(offset, use);
    }
  }
  Allocator after = slab_allocator(*region, region->size());
  after.begin_rebuild();
  for (const auto& [offset, use] : kept) ASSERT_TRUE(after.mark_reachable(offset, use)) << offset;
  after.finish_rebuild();
  EXPECT_EQ(after.stats().blocks_in_use, kept.size());
  for (const auto& [offset, use] : kept) after.free(offset);
  EXPECT_EQ(after.stats().chunks_in_use, 0u);
}

TEST(AllocatorSlabs, GeometryVariantsFollowTheSettings) {
  SlabSettings settings;
  settings.growth_factor = 2;
  settings.min_size = 100;
  settings.chunk_max = 65536;
  auto region = PmRegion::in_memory(slab_heap_end_of(2));
  Allocator allocator(*region, kSlabHeapBegin, region->size(), HeapGeometry::slabs(settings));
  const std::vector<ClassUsage> usage = allocator.item_class_usage();
  EXPECT_EQ(usage.front().block_size, 152u);
  EXPECT_EQ(usage[1].block_size, 304u);
  EXPECT_EQ(usage[usage.size() - 2].block_size, 65536u);
  EXPECT_EQ(allocator.block_size(allocator.allocate(65537)), kSlabChunk);
}

// After every persistence point, a restart from the persisted image can mark every block handed
// out so far: a chunk's header (in the table) is durable before its first block is returned.
TEST(AllocatorSlabs, HeaderTableEntryIsDurableBeforeItsBlockIsReturned) {
  const std::size_t size = slab_heap_end_of(6);
  CrashSimulator sim(size);
  auto region = PmRegion::in_memory(size, &sim);
  Allocator allocator = slab_allocator(*region, size);
  std::mt19937_64 rng(5);
  std::vector<std::pair<std::uint64_t, BlockUse>> live;
  for (int step = 0; step < 300; ++step) {
    if (!live.empty() && rng() % 100 < 40) {
      const std::size_t i = rng() % live.size();
      allocator.free(live[i].first);
      live[i] = live.back();
      live.pop_back();
    } else {
      const BlockUse use = rng() % 4 == 0 ? BlockUse::kIndex : BlockUse::kItem;
      const std::size_t wanted = rng() % 10 == 0 ? 1 + rng() % (2 * kSlabChunk) : 1 + rng() % 70000;
      const std::uint64_t offset = allocator.allocate(wanted, use);
      if (offset == 0) continue;
      std::memset(region->base() + offset, 0x5a, allocator.block_size(offset));
      live.emplace_back(offset, use);
    }
    auto restarted = PmRegion::from_image(sim.image());
    Allocator rebuilt = slab_allocator(*restarted, size);
    rebuilt.begin_rebuild();
    for (const auto& [offset, use] : live) {
      ASSERT_TRUE(rebuilt.mark_reachable(offset, use)) << "block " << offset << " lost its chunk";
    }
    rebuilt.finish_rebuild();
    ASSERT_EQ(rebuilt.stats().blocks_in_use, live.size());
  }
  EXPECT_GT(sim.persistence_points(), 0u);
}

}  // namespace
}  // namespace pmcached::pm

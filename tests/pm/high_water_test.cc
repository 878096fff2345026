// The allocator's persistent chunk high-water mark (allocator.h): rebuild reads no header above
// it, a crash at any persistence point (adversarial too) loses no published block, a layout 1
// pool is read whole and upgraded to layout 2 (crash-safely), a full file system fails an
// allocation instead of faulting, and a new pool file is sparse. New pools are layout 3 (a
// header table); these use 256 KiB slab pages so that 24 chunks and a 4 MiB step stay small.
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>

#include <gtest/gtest.h>
#include <xxhash.h>

#include "engine/pm/allocator.h"
#include "engine/pm/crash_simulator.h"
#include "engine/pm/fault_injection.h"
#include "engine/pm/pool.h"

namespace pmcached::pm {
namespace {

constexpr std::size_t kChunks = 24;
constexpr std::size_t kChunkSize = 256u << 10;
const SlabSettings kSlabs{kChunkSize, 48, 1.25, 64u << 10};
constexpr std::uint64_t kChunksBegin = kSuperblockSize + 4096;  // after 24 headers, 4 KiB aligned
constexpr std::size_t kPoolSize = kChunksBegin + kChunks * kChunkSize;
// The tests publish block offsets in a table in the superblock's unused bytes, as an index would
// in its nodes: a published block must survive every crash.
constexpr std::uint64_t kTable = 1024;
constexpr std::size_t kTableSlots = (kSuperblockSize - kTable) / 8;

std::uint64_t* slot(Pool& pool, std::size_t i) {
  return pool.region().at<std::uint64_t>(kTable + 8 * i);
}

// Rebuilds over `pool` from its published blocks; every one must be found.
std::unique_ptr<Allocator> rebuild(Pool& pool, std::set<std::uint64_t>* published = nullptr) {
  auto allocator = std::make_unique<Allocator>(pool);
  allocator->begin_rebuild();
  for (std::size_t i = 0; i < kTableSlots; ++i) {
    const std::uint64_t offset = *slot(pool, i);
    if (offset == 0) continue;
    EXPECT_TRUE(allocator->mark_reachable(offset)) << "published block " << offset << " lost";
    if (published != nullptr) published->insert(offset);
  }
  allocator->finish_rebuild();
  return allocator;
}

// Allocates blocks of mixed sizes (large runs too) until 20 of the 24 chunks are in use (the mark
// rises to 16, then to the heap's end), publishing each block and unpublishing then freeing
// some, as a store does.
void workload(Pool& pool, Allocator& allocator, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < kTableSlots && allocator.stats().chunks_in_use < 20; ++i) {
    const std::size_t size =
        rng() % 8 == 0 ? kChunkSize + rng() % (2 * kChunkSize) : 64u << (rng() % 10);
    const std::uint64_t offset = allocator.allocate(size);
    ASSERT_NE(offset, 0u);
    pool.region().store_u64_persist(slot(pool, i), offset);
    if (i > 0 && rng() % 4 == 0) {
      const std::size_t victim = rng() % i;
      const std::uint64_t freed = *slot(pool, victim);
      if (freed == 0) continue;
      pool.region().store_u64_persist(slot(pool, victim), 0);
      allocator.free(freed);
    }
  }
}

std::unique_ptr<Pool> new_pool(CrashSimulator* sim = nullptr) {
  return Pool::open_region(PmRegion::in_memory(kPoolSize, sim), "wort", kSlabs);
}

TEST(HighWater, NewPoolStartsAtZeroAndRisesInSteps) {
  auto pool = new_pool();
  ASSERT_EQ(pool->layout_version(), kLayoutVersion);
  ASSERT_TRUE(pool->has_chunk_high_water());
  Allocator allocator(*pool);
  EXPECT_EQ(allocator.stats().chunks_high_water, 0u);
  ASSERT_NE(allocator.allocate(100), 0u);
  EXPECT_EQ(allocator.stats().chunks_high_water, 16u);  // one step
  EXPECT_EQ(*pool->chunk_high_water_field(), 16u);
  ASSERT_NE(allocator.allocate(17 * kChunkSize), 0u);  // chunks 1..17: past the first step
  EXPECT_EQ(*pool->chunk_high_water_field(), 24u);     // capped at the heap's end
}

// A valid header above the mark (here: a copy of a real one) is never read: the mark is what
// rebuild trusts, so an empty heap's pages are never touched.
TEST(HighWater, RebuildReadsNoHeaderAboveTheMark) {
  auto pool = new_pool();
  std::uint64_t block = 0;
  {
    Allocator allocator(*pool);
    block = allocator.allocate(100);
    ASSERT_EQ(block, kChunksBegin);
  }
  // Chunk 20's table entry gets chunk 0's header.
  std::memcpy(pool->region().at<char>(kSuperblockSize + 20 * kChunkHeaderBytes),
              pool->region().at<char>(kSuperblockSize), kChunkHeaderBytes);
  const std::uint64_t above = kChunksBegin + 20 * kChunkSize;
  Allocator allocator(*pool);
  allocator.begin_rebuild();
  EXPECT_FALSE(allocator.mark_reachable(above));
  EXPECT_TRUE(allocator.mark_reachable(block));
  allocator.finish_rebuild();
  EXPECT_EQ(allocator.stats().chunks_in_use, 1u);
}

TEST(HighWater, CrashAtEveryPointLosesNoPublishedBlock) {
  std::uint64_t points = 0;
  {
    CrashSimulator sim(kPoolSize);
    auto pool = new_pool(&sim);
    Allocator allocator(*pool);
    workload(*pool, allocator, 7);
    points = sim.persistence_points();
  }
  for (std::uint64_t k = 1; k <= points; ++k) {
    for (std::uint64_t seed = 0; seed <= 1; ++seed) {  // exact, then adversarial
      CrashSimulator sim(kPoolSize);
      sim.crash_at(k, seed != 0, seed);
      {
        auto pool = new_pool(&sim);
        Allocator allocator(*pool);
        workload(*pool, allocator, 7);
      }
      ASSERT_TRUE(sim.crash_image().has_value());
      // Reopened with the flags it was made with (an interrupted format is formatted again).
      auto pool = Pool::open_region(PmRegion::from_image(*sim.crash_image()), "wort", kSlabs);
      std::set<std::uint64_t> published;
      auto allocator = rebuild(*pool, &published);
      if (HasFailure()) return;
      // The rebuilt allocator hands out only blocks no published one overlaps.
      for (std::uint64_t offset; (offset = allocator->allocate(4000)) != 0;) {
        const auto next = published.lower_bound(offset);
        ASSERT_TRUE(next == published.end() || *next >= offset + allocator->block_size(offset));
        if (next != published.begin()) {
          const std::uint64_t prev = *std::prev(next);
          ASSERT_LE(prev + allocator->block_size(prev), offset) << "point " << k;
        }
      }
    }
  }
}

// A layout 1 pool as the first pmcached wrote it: 256 KiB chunks with in-chunk headers
// anywhere, no mark, no slab settings.
std::vector<char> layout_1_image(std::vector<std::uint64_t>& published) {
  auto pool = Pool::open_region(PmRegion::in_memory(kPoolSize), "wort");
  Allocator allocator(pool->region(), pool->heap_begin(), pool->heap_end(),
                      HeapGeometry::legacy());  // no mark
  for (std::size_t i = 0; i < 40; ++i) {
    const std::uint64_t offset = allocator.allocate(i % 10 == 9 ? 2 * kLegacyChunkSize : 30000);
    pool->region().store_u64_persist(slot(*pool, i), offset);
    published.push_back(offset);
  }
  char* sb = pool->region().base();
  const std::uint32_t version = 1;
  std::memcpy(sb + 8, &version, sizeof(version));
  std::memset(sb + 128, 0, 64);  // line 2 (the mark, layout 3's slab settings) was zero
  const std::uint64_t checksum = XXH64(sb, 56, 0);
  std::memcpy(sb + 56, &checksum, sizeof(checksum));
  return {sb, sb + kPoolSize};
}

TEST(HighWater, Layout1PoolIsReadWholeThenUpgraded) {
  std::vector<std::uint64_t> published;
  const std::vector<char> v1 = layout_1_image(published);
  auto pool = Pool::open_region(PmRegion::from_image(v1), "wort");
  EXPECT_EQ(pool->layout_version(), kOldestReadableLayout);
  EXPECT_FALSE(pool->has_chunk_high_water());
  EXPECT_FALSE(pool->heap_geometry().header_table);
  auto allocator = rebuild(*pool);
  EXPECT_TRUE(pool->has_chunk_high_water());
  EXPECT_EQ(pool->layout_version(), kMarkedLegacyLayout);
  // The mark is the end of the last chunk with a header: the end of the highest block.
  std::uint64_t end = 0;
  for (std::uint64_t offset : published) {
    const std::uint64_t block_end = offset - kSuperblockSize + allocator->block_size(offset);
    end = std::max(end, (block_end + kLegacyChunkSize - 1) / kLegacyChunkSize);
  }
  EXPECT_EQ(*pool->chunk_high_water_field(), end);
  EXPECT_LT(end, kChunks - 1);
  allocator.reset();
  const std::vector<char> upgraded(pool->region().base(), pool->region().base() + kPoolSize);
  auto reopened = Pool::open_region(PmRegion::from_image(upgraded), "wort");
  EXPECT_EQ(reopened->layout_version(), kMarkedLegacyLayout);
  EXPECT_TRUE(reopened->has_chunk_high_water());
  EXPECT_FALSE(reopened->slab_settings().has_value());
  EXPECT_EQ(reopened->heap_geometry().chunk_size, kLegacyChunkSize);
  auto again = rebuild(*reopened);
  EXPECT_EQ(again->stats().blocks_in_use, published.size());
}

// A crash anywhere in the upgrade leaves a pool that reads as layout 1 (and is read whole again)
// or as layout 2 with a valid mark; adversarial crashes include the version without its checksum.
TEST(HighWater, CrashDuringTheUpgradeKeepsEveryBlock) {
  std::vector<std::uint64_t> published;
  const std::vector<char> v1 = layout_1_image(published);
  std::uint64_t points = 0;
  {
    CrashSimulator sim(kPoolSize);
    auto pool = Pool::open_region(PmRegion::from_image(v1, &sim), "wort");
    (void)rebuild(*pool);
    points = sim.persistence_points();
  }
  ASSERT_GE(points, 3u);  // the mark, the version, the checksum
  int as_layout_1 = 0;
  int as_layout_2 = 0;
  for (std::uint64_t k = 1; k <= points; ++k) {
    for (std::uint64_t seed = 0; seed <= 8; ++seed) {
      CrashSimulator sim(kPoolSize);
      sim.crash_at(k, seed != 0, seed);
      {
        auto pool = Pool::open_region(PmRegion::from_image(v1, &sim), "wort");
        (void)rebuild(*pool);
      }
      ASSERT_TRUE(sim.crash_image().has_value());
      std::unique_ptr<Pool> pool;
      ASSERT_NO_THROW(pool = Pool::open_region(PmRegion::from_image(*sim.crash_image()), "wort"))
          << "point " << k << " seed " << seed;
      (pool->has_chunk_high_water() ? as_layout_2 : as_layout_1) += 1;
      auto allocator = rebuild(*pool);
      ASSERT_EQ(allocator->stats().blocks_in_use, published.size()) << "point " << k;
    }
  }
  EXPECT_GT(as_layout_1, 0);
  EXPECT_GT(as_layout_2, 0);
}

TEST(HighWater, FullFileSystemFailsTheAllocationNotTheProcess) {
  auto pool = new_pool();
  Allocator allocator(*pool);
  {
    FaultScope full(Fault::kReserveFails);
    EXPECT_EQ(allocator.allocate(100), 0u);
    EXPECT_EQ(*pool->chunk_high_water_field(), 0u);  // not raised over unreserved chunks
  }
  EXPECT_NE(allocator.allocate(100), 0u);
}

TEST(HighWater, NewPoolFileIsSparseAndReservedAsItGrows) {
  char pattern[] = "/tmp/high_water_test.XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::filesystem::path dir = pattern;
  const std::string path = (dir / "pool").string();
  const auto disk_bytes = [&] {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0);
    return static_cast<std::uint64_t>(st.st_blocks) * 512;
  };
  {
    auto pool = Pool::open_file(path, 256u << 20, "wort");  // memcached's 1 MiB slab pages
    EXPECT_EQ(std::filesystem::file_size(path), 256u << 20);
    EXPECT_LE(disk_bytes(), 64u << 10);  // the superblock's page (and the file system's slack)
    Allocator allocator(*pool);
    ASSERT_NE(allocator.allocate(100), 0u);
    constexpr std::uint64_t kStep = 4u << 20;
    EXPECT_GE(disk_bytes(), kStep);  // the first step is reserved (and its header-table entries)
    EXPECT_LE(disk_bytes(), kStep + (64u << 10));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pmcached::pm

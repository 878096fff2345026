// The allocator's persistent chunk high-water mark (allocator.h): rebuild reads no header above
// it, a crash at any persistence point (adversarial too) loses no published block, a layout 1
// pool is read whole and upgraded (crash-safely), a full file system fails an allocation instead
// of faulting, and a new pool file is sparse.
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
constexpr std::size_t kPoolSize = kSuperblockSize + kChunks * kChunkSize;
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

TEST(HighWater, NewPoolStartsAtZeroAndRisesInSteps) {
  auto pool = Pool::open_region(PmRegion::in_memory(kPoolSize), "wort");
  ASSERT_TRUE(pool->has_chunk_high_water());
  Allocator allocator(*pool);
  EXPECT_EQ(allocator.stats().chunks_high_water, 0u);
  ASSERT_NE(allocator.allocate(100), 0u);
  EXPECT_EQ(allocator.stats().chunks_high_water, 16u);  // one step
  EXPECT_EQ(*pool->chunk_high_water_field(), 16u);
  ASSERT_NE(allocator.allocate(17 * kChunkSize), 0u);  // chunks 1..18: past the first step
  EXPECT_EQ(*pool->chunk_high_water_field(), 24u);     // capped at the heap's end
}

// A valid header above the mark (here: a copy of a real one) is never read: the mark is what
// rebuild trusts, so an empty heap's pages are never touched.
TEST(HighWater, RebuildReadsNoHeaderAboveTheMark) {
  auto pool = Pool::open_region(PmRegion::in_memory(kPoolSize), "wort");
  std::uint64_t block = 0;
  {
    Allocator allocator(*pool);
    block = allocator.allocate(100);
    ASSERT_EQ(block, kSuperblockSize + kChunkHeaderSize);
  }
  const std::uint64_t above = kSuperblockSize + 20 * kChunkSize;
  std::memcpy(pool->region().at<char>(above), pool->region().at<char>(kSuperblockSize),
              kChunkHeaderSize);
  Allocator allocator(*pool);
  allocator.begin_rebuild();
  EXPECT_FALSE(allocator.mark_reachable(above + kChunkHeaderSize));
  EXPECT_TRUE(allocator.mark_reachable(block));
  allocator.finish_rebuild();
  EXPECT_EQ(allocator.stats().chunks_in_use, 1u);
}

TEST(HighWater, CrashAtEveryPointLosesNoPublishedBlock) {
  std::uint64_t points = 0;
  {
    CrashSimulator sim(kPoolSize);
    auto pool = Pool::open_region(PmRegion::in_memory(kPoolSize, &sim), "wort");
    Allocator allocator(*pool);
    workload(*pool, allocator, 7);
    points = sim.persistence_points();
  }
  for (std::uint64_t k = 1; k <= points; ++k) {
    for (std::uint64_t seed = 0; seed <= 1; ++seed) {  // exact, then adversarial
      CrashSimulator sim(kPoolSize);
      sim.crash_at(k, seed != 0, seed);
      {
        auto pool = Pool::open_region(PmRegion::in_memory(kPoolSize, &sim), "wort");
        Allocator allocator(*pool);
        workload(*pool, allocator, 7);
      }
      ASSERT_TRUE(sim.crash_image().has_value());
      auto pool = Pool::open_region(PmRegion::from_image(*sim.crash_image()), "wort");
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

// A layout 1 pool as the previous pmcached wrote it: no mark, headers anywhere.
std::vector<char> layout_1_image(std::vector<std::uint64_t>& published) {
  auto pool = Pool::open_region(PmRegion::in_memory(kPoolSize), "wort");
  Allocator allocator(pool->region(), pool->heap_begin(), pool->heap_end());  // no mark
  for (std::size_t i = 0; i < 40; ++i) {
    const std::uint64_t offset = allocator.allocate(i % 10 == 9 ? 2 * kChunkSize : 30000);
    pool->region().store_u64_persist(slot(*pool, i), offset);
    published.push_back(offset);
  }
  char* sb = pool->region().base();
  const std::uint32_t version = 1;
  std::memcpy(sb + 8, &version, sizeof(version));
  const std::uint64_t checksum = XXH64(sb, 56, 0);
  std::memcpy(sb + 56, &checksum, sizeof(checksum));
  return {sb, sb + kPoolSize};
}

TEST(HighWater, Layout1PoolIsReadWholeThenUpgraded) {
  std::vector<std::uint64_t> published;
  const std::vector<char> v1 = layout_1_image(published);
  auto pool = Pool::open_region(PmRegion::from_image(v1), "wort");
  EXPECT_FALSE(pool->has_chunk_high_water());
  auto allocator = rebuild(*pool);
  EXPECT_TRUE(pool->has_chunk_high_water());
  // The mark is the end of the last chunk with a header: the end of the highest block.
  std::uint64_t end = 0;
  for (std::uint64_t offset : published) {
    const std::uint64_t block_end = offset - kSuperblockSize + allocator->block_size(offset);
    end = std::max(end, (block_end + kChunkSize - 1) / kChunkSize);
  }
  EXPECT_EQ(*pool->chunk_high_water_field(), end);
  EXPECT_LT(end, kChunks - 1);
  allocator.reset();
  const std::vector<char> upgraded(pool->region().base(), pool->region().base() + kPoolSize);
  auto reopened = Pool::open_region(PmRegion::from_image(upgraded), "wort");
  EXPECT_TRUE(reopened->has_chunk_high_water());
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
  auto pool = Pool::open_region(PmRegion::in_memory(kPoolSize), "wort");
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
    auto pool = Pool::open_file(path, 256u << 20, "wort");
    EXPECT_EQ(std::filesystem::file_size(path), 256u << 20);
    EXPECT_LE(disk_bytes(), 64u << 10);  // the superblock's page (and the file system's slack)
    Allocator allocator(*pool);
    ASSERT_NE(allocator.allocate(100), 0u);
    EXPECT_GE(disk_bytes(), 16 * kChunkSize);  // the first step is reserved
    EXPECT_LE(disk_bytes(), 16 * kChunkSize + (64u << 10));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pmcached::pm

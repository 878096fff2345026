// The store on a pool's heap: memory-full behaviour as memcached's (-M or eviction), measured
// in the heap's real block sizes, for every persistent engine (the `persistent` engine suite,
// engine_suites.h).
#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine/open_store.h"
#include "engine/pm/allocator.h"
#include "engine/pm/fault_injection.h"
#include "engine/pm/pm_region.h"
#include "engine/pm/pool.h"
#include "tests/engine/engine_suites.h"

namespace pmcached::engine {
namespace {

// Small enough to fill quickly, large enough that the index's own chunks (one per node size
// class in use: up to four for the ART engines, 1 MiB each) are a small share of the heap.
constexpr std::size_t kPmPoolSize = 16u << 20;
// The mixed-size tests fill ~20 item classes: 63 one-MiB pages give each a few.
constexpr std::size_t kMixedPoolSize = 64u << 20;

class StorePmTest : public ::testing::TestWithParam<std::string> {
 protected:
  void open(bool evict, std::size_t pool_size = kPmPoolSize) {
    StoreConfig config;
    config.engine = GetParam();
    config.region = pm::PmRegion::in_memory(pool_size);
    config.options.evict_when_full = evict;
    opened_ = open_store(std::move(config), clock_);
    pool_ = opened_->pool();
    store_ = &opened_->store();
  }

  StoreStatus set(int i, std::size_t size) {
    std::string key("key");
    key += std::to_string(i);
    const std::string value(size, 'v');
    StoreRequest request;
    request.key = key;
    request.value = value;
    return store_->store(request).status;
  }
  // Whether key `i` is readable with a value of `size` bytes.
  bool has(int i, std::size_t size) {
    std::string key("key");
    key += std::to_string(i);
    GetRequest request;
    request.key = key;
    std::size_t found = 0;
    const GetOutcome out =
        store_->get(request, [&](const ItemView& view) { found = view.value.size(); });
    return out.status == StoreStatus::kHit && found == size;
  }

  ManualClock clock_;
  std::unique_ptr<OpenStore> opened_;
  pm::Pool* pool_ = nullptr;
  Store* store_ = nullptr;
};

TEST_P(StorePmTest, EvictsInsteadOfFailingWhenThePoolIsFull) {
  open(/*evict=*/true);
  for (int i = 0; i < 20'000; ++i) ASSERT_EQ(set(i, 1000), StoreStatus::kStored) << i;
  const StoreStats stats = store_->stats();
  EXPECT_GT(stats.evictions, 0u);
  EXPECT_LE(stats.bytes, stats.limit_maxbytes);
  EXPECT_EQ(stats.curr_items + stats.evictions, 20'000u);
}

TEST_P(StorePmTest, DisabledEvictionsReportOutOfMemory) {
  open(/*evict=*/false);
  int stored = 0;
  int refused = 0;
  for (int i = 0; i < 20'000; ++i) {
    const StoreStatus status = set(i, 1000);
    if (status == StoreStatus::kStored) ++stored;
    if (status == StoreStatus::kOutOfMemory) ++refused;
  }
  EXPECT_GT(stored, 1000);
  EXPECT_EQ(stored + refused, 20'000);
  EXPECT_EQ(store_->stats().evictions, 0u);
}

// Issue 20: a pool file is sparse and its heap reserves file blocks as it grows. When the file
// system is full the heap stops growing: the store evicts (or refuses) within what it has, as for
// a full pool, and nothing faults.
TEST_P(StorePmTest, AFullFileSystemStopsTheHeapGrowingNotTheServer) {
  open(/*evict=*/true);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(set(i, 1000), StoreStatus::kStored) << i;
  const std::uint64_t reserved = opened_->allocator()->stats().chunks_high_water;
  ASSERT_LT(reserved, opened_->allocator()->stats().chunks_total);
  pm::FaultScope full_disk(pm::Fault::kReserveFails);
  for (int i = 1000; i < 20'000; ++i) ASSERT_EQ(set(i, 1000), StoreStatus::kStored) << i;
  EXPECT_GT(store_->stats().evictions, 0u);
  EXPECT_EQ(opened_->allocator()->stats().chunks_high_water, reserved);
  EXPECT_TRUE(has(19'999, 1000));
}

// Every chunk is committed to one size class by the first fill; later sizes need chunks to be
// evacuated (memcached's slab rebalancing), not just items evicted.
TEST_P(StorePmTest, AFullPoolServesNewItemSizesToo) {
  open(/*evict=*/true);
  int key = 0;
  for (const std::size_t size : {100u, 3000u, 20000u, 500u, 200000u, 1000u}) {
    for (int i = 0; i < 3000; ++i, ++key) {
      ASSERT_EQ(set(key, size), StoreStatus::kStored) << "value size " << size << ", set " << i;
    }
  }
  EXPECT_GT(store_->stats().evictions, 0u);
}

// Issue 15: after sets of random sizes (100 B - 50 KB) totalling 6 x the heap, with keys in an
// order unrelated to write order, the most recent writes that add up to half the heap are
// readable. Chunk evacuation used to empty the chunks with the fewest blocks -- the ones being
// filled, holding the newest items -- and only ~15-40% of them survived.
TEST_P(StorePmTest, TheMostRecentWritesSurviveMixedSizeOverwrites) {
  open(/*evict=*/true, kMixedPoolSize);
  std::mt19937_64 rng(15);
  std::uniform_int_distribution<std::size_t> value_size(100, 50'000);
  const std::size_t heap = pool_->heap_end() - pool_->heap_begin();
  const auto key_of_write = [](int i) { return static_cast<int>((i * 7919L) % 1'000'003); };
  std::vector<std::size_t> sizes;
  for (std::size_t total = 0; total < 6 * heap;) {
    sizes.push_back(value_size(rng));
    total += sizes.back();
    const int i = static_cast<int>(sizes.size()) - 1;
    ASSERT_EQ(set(key_of_write(i), sizes.back()), StoreStatus::kStored) << "set " << i;
  }
  std::size_t recent_bytes = 0;
  int checked = 0;
  int readable = 0;
  for (int i = static_cast<int>(sizes.size()) - 1;
       i >= 0 && recent_bytes + sizes[static_cast<std::size_t>(i)] <= heap / 2; --i) {
    recent_bytes += sizes[static_cast<std::size_t>(i)];
    ++checked;
    if (has(key_of_write(i), sizes[static_cast<std::size_t>(i)])) ++readable;
  }
  EXPECT_GT(checked, 100);
  EXPECT_GE(readable * 100, checked * 95)
      << readable << " of the " << checked << " most recent writes are readable";
}

// Concurrent writers of mixed sizes on a full pool: none is refused. A block one writer frees in
// its class may be taken by another writer of that class; the old chunk evacuation refused
// 50-70 of ~4,000 such sets over four connections.
TEST_P(StorePmTest, ConcurrentMixedSizeSetsOnAFullPoolAreAllStored) {
  open(/*evict=*/true);
  const std::size_t heap = pool_->heap_end() - pool_->heap_begin();
  constexpr int kWriters = 4;
  std::atomic<int> refused{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < kWriters; ++t) {
    writers.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(t));
      std::uniform_int_distribution<std::size_t> value_size(100, 50'000);
      std::size_t written = 0;
      for (int i = t; written < 3 * heap / kWriters; i += kWriters) {
        const std::size_t size = value_size(rng);
        written += size;
        if (set(i, size) != StoreStatus::kStored) refused.fetch_add(1);
      }
    });
  }
  for (std::thread& writer : writers) writer.join();
  EXPECT_EQ(refused.load(), 0);
  const StoreStats stats = store_->stats();
  EXPECT_LE(stats.bytes, stats.limit_maxbytes);
  EXPECT_EQ(stats.curr_items, store_->engine().size());
}

INSTANTIATE_ENGINE_SUITE(persistent, StorePmTest);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(StorePmTest);

}  // namespace
}  // namespace pmcached::engine

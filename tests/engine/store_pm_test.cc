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

// --- store_batch (group commit) ------------------------------------------------------------------

std::vector<StoreRequest> mixed_batch(const std::vector<std::string>& keys,
                                      const std::vector<std::string>& values) {
  std::vector<StoreRequest> requests;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    StoreRequest request;
    request.key = keys[i];
    request.value = values[i];
    request.client_flags = static_cast<std::uint32_t>(i);
    if (keys[i] == "appended") request.mode = StoreMode::kAppend;
    if (keys[i] == "added") request.mode = StoreMode::kAdd;
    requests.push_back(request);
  }
  return requests;
}

// store_batch() answers and counts what the same store() calls one after the other do: new keys,
// replaces, a key twice, an append, an add of a present key, a value over the item size limit
// and an empty key.
TEST_P(StorePmTest, ABatchOfSetsActsAsTheSetsOneByOne) {
  const std::vector<std::string> keys = {"k0",    "k1", "k2", "k1",  "appended",
                                         "added", "k3", "",   "big", "k4"};
  const std::vector<std::string> values = {
      "a", "bb", "ccc", "dddd", "+", "x", std::string(5000, 'e'), "z", std::string(2u << 20, 'b'),
      "f"};
  std::vector<StoreStatus> statuses[2];
  StoreStats stats[2];
  for (int batched = 0; batched < 2; ++batched) {
    open(/*evict=*/true, kMixedPoolSize);
    for (const char* key : {"k1", "k3", "appended", "added"}) {
      StoreRequest request;
      request.key = key;
      request.value = "old";
      ASSERT_EQ(store_->store(request).status, StoreStatus::kStored);
    }
    const std::vector<StoreRequest> requests = mixed_batch(keys, values);
    std::vector<StoreOutcome> outcomes(requests.size());
    if (batched == 1) {
      store_->store_batch(requests, outcomes);
    } else {
      for (std::size_t i = 0; i < requests.size(); ++i) outcomes[i] = store_->store(requests[i]);
    }
    for (std::size_t i = 0; i < requests.size(); ++i) {
      statuses[batched].push_back(outcomes[i].status);
      if (outcomes[i].status != StoreStatus::kStored) continue;
      GetRequest get;
      get.key = keys[i];
      std::string value;
      (void)store_->get(get, [&](const ItemView& view) { value = view.value; });
      if (keys[i] == "k1" && i == 1) continue;  // replaced by the batch's second k1
      EXPECT_EQ(value, keys[i] == "appended" ? "old+" : values[i]) << keys[i];
    }
    stats[batched] = store_->stats();
  }
  EXPECT_EQ(statuses[1], statuses[0]);
  EXPECT_EQ(statuses[1][8], StoreStatus::kTooLarge);
  EXPECT_EQ(statuses[1][5], StoreStatus::kNotStored);
  EXPECT_EQ(stats[1].curr_items, stats[0].curr_items);
  EXPECT_EQ(stats[1].total_items, stats[0].total_items);
  EXPECT_EQ(stats[1].cmd_set, stats[0].cmd_set);
  EXPECT_EQ(stats[1].bytes, stats[0].bytes);
  EXPECT_EQ(stats[1].curr_items, store_->engine().size());
}

// A batch's replaces move their keys to the head of the recency order, as sets one by one do
// (RecencyLists::replace_all): on a full pool the next sets evict the keys the batch did not
// touch. Replaces into another size class keep each class's counts and requested bytes as the
// sets one by one do. Deletes first free blocks of both classes, so that the batch's records are
// allocated in the group rather than through store() (fptree, wbtree and nvtree store even a
// batch one by one).
TEST_P(StorePmTest, ABatchOfReplacesKeepsTheRecencyOrderOfSetsOneByOne) {
  constexpr int kSameClass = 40, kOtherClass = 5, kFreed = 60;
  const auto remove = [&](const std::string& key) {
    DeleteRequest request;
    request.key = key;
    return store_->remove(request);
  };
  std::vector<SizeClassStats> classes[2];
  for (int batched = 0; batched < 2; ++batched) {
    open(/*evict=*/true);
    const std::string other_value(3000, 'o');
    StoreRequest other;
    other.value = other_value;
    for (int i = 0; i < kOtherClass; ++i) {
      const std::string key = "other" + std::to_string(i);
      other.key = key;
      ASSERT_EQ(store_->store(other).status, StoreStatus::kStored);
    }
    int next = 0;
    while (store_->stats().evictions == 0) ASSERT_EQ(set(next++, 1000), StoreStatus::kStored);
    // The fill ran out of 1000-byte blocks before it reached the memory limit, so it evicted
    // from that class only and the other class's records are still there.
    for (int i = 0; i < kOtherClass; ++i) {
      ASSERT_EQ(remove("other" + std::to_string(i)), StoreStatus::kDeleted) << i;
    }
    for (int i = 1; i <= kFreed; ++i) {
      ASSERT_EQ(remove("key" + std::to_string(next - i)), StoreStatus::kDeleted) << next - i;
    }
    int oldest = 0;
    while (!has(oldest, 1000)) ++oldest;

    std::vector<std::string> keys;
    std::vector<std::string> values;
    for (int i = 0; i < kSameClass + kOtherClass; ++i) {
      keys.push_back("key" + std::to_string(oldest + i));
      values.emplace_back(i < kSameClass ? 1000 : 3000, 'r');
    }
    std::vector<StoreRequest> requests(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      requests[i].key = keys[i];
      requests[i].value = values[i];
    }
    std::vector<StoreOutcome> outcomes(requests.size());
    const std::uint64_t evicted_before = store_->stats().evictions;
    if (batched == 1) {
      store_->store_batch(requests, outcomes);
    } else {
      for (std::size_t i = 0; i < requests.size(); ++i) outcomes[i] = store_->store(requests[i]);
    }
    for (const StoreOutcome& outcome : outcomes) ASSERT_EQ(outcome.status, StoreStatus::kStored);
    ASSERT_EQ(store_->stats().evictions, evicted_before);  // every record had a free block
    classes[batched] = store_->slab_stats().classes;

    while (store_->stats().evictions < evicted_before + kSameClass) {
      ASSERT_EQ(set(next++, 1000), StoreStatus::kStored);
    }
    for (int i = 0; i < kSameClass; ++i) EXPECT_TRUE(has(oldest + i, 1000)) << oldest + i;
    for (int i = kSameClass; i < kSameClass + kOtherClass; ++i) EXPECT_TRUE(has(oldest + i, 3000));
    EXPECT_FALSE(has(oldest + kSameClass + kOtherClass, 1000));
    EXPECT_EQ(store_->stats().curr_items, store_->engine().size());
    std::uint64_t listed = 0;  // every record the index holds is in a recency list
    for (const SizeClassStats& c : store_->slab_stats().classes) listed += c.number;
    EXPECT_EQ(listed, store_->stats().curr_items);
  }
  ASSERT_EQ(classes[1].size(), classes[0].size());
  for (std::size_t c = 0; c < classes[0].size(); ++c) {
    EXPECT_EQ(classes[1][c].number, classes[0][c].number) << "class " << classes[0][c].id;
    EXPECT_EQ(classes[1][c].mem_requested, classes[0][c].mem_requested)
        << "class " << classes[0][c].id;
  }
}

// Batches on a full pool: a record the heap has no block for goes through store(), which evicts.
TEST_P(StorePmTest, BatchesOfSetsOnAFullPoolEvictAndStoreEveryOne) {
  open(/*evict=*/true);
  const std::string value(1000, 'v');
  std::vector<std::string> keys(50);
  std::vector<StoreRequest> requests(50);
  std::vector<StoreOutcome> outcomes(50);
  for (int round = 0; round < 400; ++round) {
    for (int i = 0; i < 50; ++i) {
      keys[i] = "key" + std::to_string(round * 50 + i);
      requests[i].key = keys[i];
      requests[i].value = value;
    }
    store_->store_batch(requests, outcomes);
    for (const StoreOutcome& outcome : outcomes) ASSERT_EQ(outcome.status, StoreStatus::kStored);
  }
  const StoreStats stats = store_->stats();
  EXPECT_GT(stats.evictions, 0u);
  EXPECT_LE(stats.bytes, stats.limit_maxbytes);
  EXPECT_EQ(stats.curr_items + stats.evictions, 20'000u);
  EXPECT_EQ(stats.curr_items, store_->engine().size());
}

// Two threads' batches over the same keys (each takes several stripes) and single sets beside
// them: no deadlock, every request stored, and the accounting whole.
TEST_P(StorePmTest, ConcurrentBatchesOverTheSameKeysAreAllStored) {
  open(/*evict=*/true);
  std::atomic<int> refused{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 3; ++t) {
    writers.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(t));
      std::vector<std::string> keys(32);
      std::vector<StoreRequest> requests(32);
      std::vector<StoreOutcome> outcomes(32);
      const std::string value(100 + 50 * t, 'v');
      for (int round = 0; round < 300; ++round) {
        if (t == 2) {  // single sets
          if (set(static_cast<int>(rng() % 200), 300) != StoreStatus::kStored) refused.fetch_add(1);
          continue;
        }
        for (std::size_t i = 0; i < keys.size(); ++i) {
          keys[i] = "key" + std::to_string(rng() % 200);
          requests[i].key = keys[i];
          requests[i].value = value;
        }
        store_->store_batch(requests, outcomes);
        for (const StoreOutcome& outcome : outcomes) {
          if (outcome.status != StoreStatus::kStored) refused.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& writer : writers) writer.join();
  EXPECT_EQ(refused.load(), 0);
  const StoreStats stats = store_->stats();
  EXPECT_EQ(stats.curr_items, store_->engine().size());
  EXPECT_LE(stats.curr_items, 200u);
}

INSTANTIATE_ENGINE_SUITE(persistent, StorePmTest);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(StorePmTest);

}  // namespace
}  // namespace pmcached::engine

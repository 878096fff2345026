// Store: concurrent read-modify-write on shared keys (run these under -fsanitize=thread).
#include <algorithm>
#include <atomic>
#include <charconv>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine/pm/slab_classes.h"
#include "engine/store/item.h"
#include "tests/engine/store_fixture.h"

namespace pmcached::engine::testing {
namespace {

constexpr int kThreads = 2;

TEST_F(StoreTest, CasRaceCountsExactlyTheSuccessfulUpdates) {
  constexpr int kPerThread = 2000;
  ASSERT_EQ(set("counter", "0"), StoreStatus::kStored);
  std::atomic<std::uint64_t> conflicts{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      int successes = 0;
      while (successes < kPerThread) {
        std::uint64_t cas = 0;
        std::uint64_t number = 0;
        GetRequest g;
        g.key = "counter";
        const GetOutcome got = store_->get(g, [&](const ItemView& v) {
          cas = v.cas;
          std::from_chars(v.value.data(), v.value.data() + v.value.size(), number);
        });
        ASSERT_EQ(got.status, StoreStatus::kHit);
        const std::string next = std::to_string(number + 1);
        StoreRequest r;
        r.mode = StoreMode::kCas;
        r.key = "counter";
        r.value = next;
        r.compare_cas = cas;
        const StoreStatus status = store_->store(r).status;
        if (status == StoreStatus::kStored) {
          ++successes;
        } else {
          ASSERT_EQ(status, StoreStatus::kExists);
          conflicts.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(*value("counter"), std::to_string(kThreads * kPerThread));
  const StoreStats s = store_->stats();
  EXPECT_EQ(s.cas_hits, static_cast<std::uint64_t>(kThreads * kPerThread));
  EXPECT_EQ(s.cas_badval, conflicts.load());
}

// `stats items` reads the age of each class's least recent record (its access time, under the
// class's list mutex) while fetches of that record move its access time (under its key's stripe):
// a data race unless both sides are atomic. The only record is every list's tail; the clock moves
// on so that every round's fetches write the access time.
TEST_F(StoreTest, ClassAgeIsReadWhileFetchesMoveTheAccessTime) {
  ASSERT_EQ(set("oldest", "v"), StoreStatus::kStored);
  constexpr int kRounds = 200;
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load(std::memory_order_relaxed)) {
      for (const SizeClassStats& c : store_->slab_stats().classes) EXPECT_LE(c.age, 1'000'000u);
    }
  });
  for (int round = 0; round < kRounds; ++round) {
    clock_.advance(61);
    EXPECT_TRUE(get("oldest"));
  }
  done.store(true, std::memory_order_relaxed);
  reader.join();
  const std::optional<Item> item = get("oldest");
  ASSERT_TRUE(item);
  EXPECT_EQ(item->last_access, clock_.now());
}

TEST_F(StoreTest, ConcurrentIncrementsAreNeverLost) {
  constexpr int kPerThread = 5000;
  ASSERT_EQ(set("n", "0"), StoreStatus::kStored);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      ArithmeticRequest r;
      r.key = "n";
      for (int i = 0; i < kPerThread; ++i) {
        ASSERT_EQ(store_->arithmetic(r).status, StoreStatus::kStored);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(*value("n"), std::to_string(kThreads * kPerThread));
  EXPECT_EQ(store_->stats().incr_hits, static_cast<std::uint64_t>(kThreads * kPerThread));
}

// The block a record of flags 0 takes: the chunk of its memcached class (the memory accounting
// counts blocks, item_heap.h).
std::size_t block_of(std::size_t key_size, std::size_t value_size) {
  static const std::vector<std::uint32_t> sizes = pm::slab_class_sizes({});
  return *std::lower_bound(sizes.begin(), sizes.end(),
                           memcached_item_size(key_size, value_size, 0));
}

TEST_F(StoreTest, ConcurrentMixedOperationsUnderEvictionKeepAccountingExact) {
  StoreOptions options;
  options.memory_limit_bytes = 32 * 1024;
  options.lock_stripes = 8;  // force shared stripes
  reopen(options);
  constexpr int kOps = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::uint32_t seed = 12345u + static_cast<std::uint32_t>(t);
      for (int i = 0; i < kOps; ++i) {
        seed = seed * 1664525u + 1013904223u;
        std::string key = "key";
        key.append(std::to_string((seed >> 8) % 400));
        switch ((seed >> 20) % 6) {
          case 0:
          case 1: {
            const std::string v(static_cast<std::size_t>(seed % 200), 'x');
            const StoreStatus st = set(key, v);
            ASSERT_EQ(st, StoreStatus::kStored);
            break;
          }
          case 2: (void)get(key); break;
          case 3: {
            DeleteRequest d;
            d.key = key;
            (void)store_->remove(d);
            break;
          }
          case 4: (void)put(key, "ab", StoreMode::kAppend); break;
          default: {
            GetRequest g;
            g.key = key;
            g.vivify_ttl = 100;
            g.touch_exptime = 50;
            (void)store_->get(g, nullptr);
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const StoreStats s = store_->stats();
  EXPECT_LE(s.bytes, options.memory_limit_bytes);
  EXPECT_EQ(s.curr_items, store_->engine().size());
  EXPECT_GT(s.evictions, 0u);
  // Recount the bytes from the items themselves (collect keys first: no store calls from
  // inside an engine scan).
  std::size_t bytes = 0;
  std::vector<std::string> keys;
  store_->engine().scan("", [&](std::string_view key, ItemRef) {
    keys.emplace_back(key);
    return true;
  });
  for (const std::string& key : keys) {
    auto item = get(key);
    ASSERT_TRUE(item);
    bytes += block_of(key.size(), item->value.size());
  }
  EXPECT_EQ(bytes, s.bytes);
}

// Writers that all evict must not starve one another: the room one makes is reserved for it,
// not left for a concurrent set to take (with the recency lists, evicting became cheap enough
// that a writer lost its room 16 times in a row and answered out of memory).
TEST_F(StoreTest, ConcurrentSetsOnAFullCacheAreAllStored) {
  StoreOptions options;
  options.memory_limit_bytes = 16 * 1024;
  reopen(options);
  constexpr int kSets = 50'000;
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const std::string value(100, 'v');
      for (int i = 0; i < kSets; ++i) {
        std::string key = std::to_string(t);
        key += ':';
        key += std::to_string(i);
        if (set(key, value) != StoreStatus::kStored) refused.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(refused.load(), 0);
  EXPECT_LE(store_->stats().bytes, options.memory_limit_bytes);
}

}  // namespace
}  // namespace pmcached::engine::testing

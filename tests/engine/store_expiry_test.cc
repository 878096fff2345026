// Store: memcached expiry rules and flush_all, driven by a ManualClock.
#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "engine/store/expiry.h"
#include "tests/engine/store_fixture.h"

namespace pmcached::engine::testing {
namespace {

constexpr std::int64_t kThirtyDays = 60 * 60 * 24 * 30;

TEST(ExpiryRules, AbsoluteExptimeFollowsMemcachedRealtime) {
  const std::int64_t now = 1'700'000'000;
  EXPECT_EQ(to_absolute_exptime(0, now), 0);
  EXPECT_EQ(to_absolute_exptime(1, now), now + 1);
  EXPECT_EQ(to_absolute_exptime(kThirtyDays, now), now + kThirtyDays);
  EXPECT_EQ(to_absolute_exptime(kThirtyDays + 1, now), kThirtyDays + 1);
  EXPECT_EQ(to_absolute_exptime(now + 5, now), now + 5);
  EXPECT_TRUE(is_expired(to_absolute_exptime(-1, now), now));
  EXPECT_TRUE(is_expired(to_absolute_exptime(kThirtyDays + 1, now), now));
  EXPECT_FALSE(is_expired(0, now));
  EXPECT_TRUE(is_expired(now, now));
  EXPECT_FALSE(is_expired(now + 1, now));
}

TEST_F(StoreTest, StoreAbsoluteExptimeUsesTheClock) {
  EXPECT_EQ(store_->now(), kStart);
  EXPECT_EQ(store_->absolute_exptime(10), kStart + 10);
  clock_.advance(5);
  EXPECT_EQ(store_->absolute_exptime(10), kStart + 15);
}

TEST_F(StoreTest, RelativeExptimeExpiresExactlyAtTheBoundary) {
  ASSERT_EQ(set("k", "v", 10), StoreStatus::kStored);
  EXPECT_EQ(get("k")->exptime, kStart + 10);
  clock_.advance(9);
  EXPECT_TRUE(get("k"));
  clock_.advance(1);  // exptime == now: expired
  EXPECT_FALSE(get("k"));
  const StoreStats s = store_->stats();
  EXPECT_EQ(s.get_expired, 1u);
  EXPECT_EQ(s.curr_items, 0u) << "reclaimed lazily by the get";
  EXPECT_EQ(s.bytes, 0u);
}

TEST_F(StoreTest, ThirtyDaysIsRelativeAndMoreIsAbsolute) {
  ASSERT_EQ(set("rel", "v", kThirtyDays), StoreStatus::kStored);
  EXPECT_EQ(get("rel")->exptime, kStart + kThirtyDays);
  ASSERT_EQ(set("past", "v", kThirtyDays + 1), StoreStatus::kStored);  // 1970: long past
  EXPECT_FALSE(get("past"));
  ASSERT_EQ(set("abs", "v", kStart + 100), StoreStatus::kStored);
  EXPECT_EQ(get("abs")->exptime, kStart + 100);
  clock_.set(kStart + 99);
  EXPECT_TRUE(get("abs"));
  clock_.set(kStart + 100);
  EXPECT_FALSE(get("abs"));
}

TEST_F(StoreTest, NegativeExptimeIsImmediatelyExpired) {
  ASSERT_EQ(set("k", "old"), StoreStatus::kStored);
  EXPECT_EQ(set("k", "v", -1), StoreStatus::kStored);
  EXPECT_FALSE(get("k"));
  EXPECT_EQ(put("k", "w", StoreMode::kAdd).status, StoreStatus::kStored)
      << "an expired item does not block add";
  EXPECT_EQ(*value("k"), "w");
}

TEST_F(StoreTest, ExpiredItemsAreInvisibleToEveryCommand) {
  ASSERT_EQ(set("k", "5", 1), StoreStatus::kStored);
  clock_.advance(1);
  EXPECT_EQ(put("k", "x", StoreMode::kReplace).status, StoreStatus::kNotStored);
  EXPECT_EQ(put("k", "x", StoreMode::kAppend).status, StoreStatus::kNotStored);
  EXPECT_EQ(store_->touch("k", 100), StoreStatus::kNotFound);
  ArithmeticRequest incr;
  incr.key = "k";
  EXPECT_EQ(store_->arithmetic(incr).status, StoreStatus::kNotFound);
  DeleteRequest d;
  d.key = "k";
  EXPECT_EQ(store_->remove(d), StoreStatus::kNotFound);
}

TEST_F(StoreTest, ImmediateFlushKillsExistingItemsButNotLaterSetsInTheSameSecond) {
  ASSERT_EQ(set("a", "1"), StoreStatus::kStored);
  ASSERT_EQ(set("b", "2"), StoreStatus::kStored);
  store_->flush_all(0);
  ASSERT_EQ(set("c", "3"), StoreStatus::kStored);  // same second as the flush
  EXPECT_FALSE(get("a"));
  EXPECT_FALSE(get("b"));
  EXPECT_EQ(*value("c"), "3");
  clock_.advance(1);
  EXPECT_EQ(*value("c"), "3");
  EXPECT_EQ(put("a", "new", StoreMode::kAdd).status, StoreStatus::kStored);
  const StoreStats s = store_->stats();
  EXPECT_EQ(s.cmd_flush, 1u);
  EXPECT_EQ(s.get_flushed, 2u);
}

TEST_F(StoreTest, DelayedFlushInvalidatesOlderItemsWhenTheTimeComes) {
  ASSERT_EQ(set("early", "1"), StoreStatus::kStored);
  store_->flush_all(10);  // memcached: items updated at or before now+9 die at now+9
  clock_.advance(5);
  ASSERT_EQ(set("middle", "2"), StoreStatus::kStored);
  clock_.advance(3);  // now+8
  EXPECT_TRUE(get("early"));
  EXPECT_TRUE(get("middle"));
  clock_.advance(1);  // now+9
  EXPECT_FALSE(get("early"));
  EXPECT_FALSE(get("middle"));
  clock_.advance(1);  // now+10
  ASSERT_EQ(set("late", "3"), StoreStatus::kStored);
  EXPECT_EQ(*value("late"), "3");
  clock_.advance(100);
  EXPECT_EQ(*value("late"), "3");
}

TEST_F(StoreTest, DelayedFlushDoesNotAffectItemsStoredAfterItsTime) {
  store_->flush_all(2);
  clock_.advance(2);
  ASSERT_EQ(set("after", "x"), StoreStatus::kStored);
  EXPECT_TRUE(get("after"));
  clock_.advance(60);
  EXPECT_TRUE(get("after"));
}

}  // namespace
}  // namespace pmcached::engine::testing

namespace pmcached::engine {
namespace {

TEST(StoreSweep, ReclaimsExpiredItemsWithoutAccess) {
  ManualClock clock;
  auto opened = testing::make_store(clock);
  Store* store = &opened->store();
  for (int i = 0; i < 100; ++i) {
    // (std::string operator+ trips a g++ 12 -Wrestrict false positive at -O3.)
    std::string key("k");
    key += std::to_string(i);
    StoreRequest request;
    request.key = key;
    request.value = "v";
    request.exptime = i < 60 ? 10 : 0;  // 60 expire, 40 never do
    ASSERT_EQ(store->store(request).status, StoreStatus::kStored);
  }
  EXPECT_EQ(store->reclaim_expired(1000).reclaimed, 0u);
  clock.advance(11);
  EXPECT_EQ(store->reclaim_expired(1000).reclaimed, 60u);
  EXPECT_EQ(store->stats().curr_items, 40u);
  EXPECT_EQ(store->stats().reclaimed, 60u);
  EXPECT_EQ(store->stats().expired_unfetched, 60u);
}

TEST(StoreSweep, VisitsABoundedSliceAndResumesWhereItStopped) {
  ManualClock clock;
  auto opened = testing::make_store(clock);
  Store* store = &opened->store();
  for (int i = 0; i < 100; ++i) {
    std::string key("k");
    key += std::to_string(1000 + i);
    StoreRequest request;
    request.key = key;
    request.value = "v";
    request.exptime = 5;
    ASSERT_EQ(store->store(request).status, StoreStatus::kStored);
  }
  clock.advance(6);
  std::size_t total = 0;
  for (int tick = 0; tick < 4; ++tick) {
    const std::size_t n = store->reclaim_expired(32).reclaimed;
    EXPECT_LE(n, 32u);
    total += n;
  }
  EXPECT_EQ(total, 100u);
  EXPECT_EQ(store->stats().curr_items, 0u);
}

void store_keys(Store& store, int n, std::int64_t exptime, std::string_view value = "v") {
  for (int i = 0; i < n; ++i) {
    std::string key("k");
    key += std::to_string(1000 + i);
    StoreRequest request;
    request.key = key;
    request.value = value;
    request.exptime = exptime;
    ASSERT_EQ(store.store(request).status, StoreStatus::kStored);
  }
}

// The sweep's hand wraps around; a call allowed more visits than there are keys must still
// look at each key once, not go round again (a stalled listener's call may allow 10,000).
TEST(StoreSweep, VisitsEachKeyAtMostOncePerCall) {
  ManualClock clock;
  auto opened = testing::make_store(clock);
  Store& store = opened->store();
  store_keys(store, 40, 10);
  EXPECT_EQ(store.reclaim_expired(10'000).visited, 40u);
  clock.advance(11);
  // Bounded calls go on where the last one stopped; once 30 are gone, 10 keys are left to visit.
  for (const std::size_t expected : {15u, 15u, 10u}) {
    const SweepResult sweep = store.reclaim_expired(15);
    EXPECT_EQ(sweep.visited, expected);
    EXPECT_EQ(sweep.reclaimed, expected);
  }
  EXPECT_EQ(store.stats().curr_items, 0u);
}

// A paged engine keeps its records on its pages: the sweep reads each record's header only,
// not a 900 KB value and its overflow pages, and still reclaims what expired.
TEST(StoreSweep, ReadsOnlyTheHeadersOfAPagedEnginesRecords) {
  char pattern[] = "/tmp/pmcached_sweep_XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::filesystem::path dir(pattern);
  ManualClock clock;
  {
    StoreConfig config;
    config.engine = "bptree";
    config.pool_path = (dir / "store.pool").string();
    config.pool_bytes = 16u << 20;
    config.paged.log_bytes = 8u << 20;
    // 64 KiB pages: a 900 KB record's chain is 15 pages (with 4 KiB pages a write would hold
    // more latches than TSan's deadlock detector tracks).
    config.paged.page_size = 65536;
    config.paged.buffer_pool_bytes = 8u << 20;
    config.paged.page_file_bytes = 64u << 20;
    auto opened = open_store(std::move(config), clock);
    Store& store = opened->store();
    store_keys(store, 3, 10, std::string(900 * 1024, 'v'));
    const auto fixes = [&] {
      for (const EngineStat& stat : store.engine_stats()) {
        if (stat.name == "buffer_fixes") return std::stoull(stat.value);
      }
      ADD_FAILURE() << "no buffer_fixes in the engine's stats";
      return 0ull;
    };
    const unsigned long long before = fixes();
    const SweepResult sweep = store.reclaim_expired(100);
    EXPECT_EQ(sweep.visited, 3u);
    EXPECT_EQ(sweep.reclaimed, 0u);
    // Whole records would fix their 15 overflow pages each, 45 in all besides the tree's pages
    // (the batch's scan and each key's descent: 8 here); a header is in the leaf.
    EXPECT_LT(fixes() - before, 45u);
    clock.advance(11);
    EXPECT_EQ(store.reclaim_expired(100).reclaimed, 3u);
    EXPECT_EQ(store.stats().curr_items, 0u);
    opened->close();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pmcached::engine

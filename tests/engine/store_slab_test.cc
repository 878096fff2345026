// Size classes: items land in memcached's class numbers (ITEM_ntotal = 48 + 8 + key + 1 +
// (4 if flags) + value + 2, classes 96, 120, 152, ... from `memcached -vv`), in the DRAM heap and
// in a pool's heap, and the per-class counters count what memcached's `stats slabs` / `stats
// items` count.
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <xxhash.h>

#include "engine/open_store.h"
#include "engine/pm/pm_region.h"
#include "tests/engine/store_fixture.h"

namespace pmcached::engine::testing {
namespace {

struct Placement {
  std::size_t key_size;
  std::size_t value_size;
  std::uint32_t flags;
  std::uint32_t memcached_class;  // what memcached 1.6.18 reports for the same set
};

// Checked against memcached -p ... `stats items` after the same sets.
constexpr Placement kPlacements[] = {
    {1, 10, 0, 1},        // ntotal 70 -> 96
    {1, 36, 0, 1},        // 96 exactly
    {1, 37, 0, 2},        // 97 -> 120
    {1, 200, 5, 6},       // 264 (flags add 4) -> 304
    {1, 1000, 0, 12},     // 1060 -> 1184
    {10, 100000, 0, 32},  // 100070 -> 103496
    {1, 524000, 0, 39},   // 524060 -> 524288, the last class
    {1, 600000, 0, 39},   // above slab_chunk_max: a whole page here, counted in the last class
};

const SizeClassStats* find_class(const SlabStats& stats, std::uint32_t id) {
  for (const SizeClassStats& c : stats.classes) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

void expect_memcached_classes(Store& store) {
  ASSERT_EQ(store.slab_stats().classes.size(), 39u);
  int n = 0;
  for (const Placement& p : kPlacements) {
    std::string key(p.key_size, 'k');
    key.back() = static_cast<char>('a' + n++);
    const std::string value(p.value_size, 'v');
    StoreRequest r;
    r.key = key;
    r.value = value;
    r.client_flags = p.flags;
    const SlabStats before = store.slab_stats();
    ASSERT_EQ(store.store(r).status, StoreStatus::kStored) << key.size() << "/" << p.value_size;
    const SlabStats after = store.slab_stats();
    for (std::size_t c = 0; c < after.classes.size(); ++c) {
      const std::uint64_t added = after.classes[c].number - before.classes[c].number;
      EXPECT_EQ(added, after.classes[c].id == p.memcached_class ? 1u : 0u)
          << "value " << p.value_size << " went to class " << after.classes[c].id;
    }
  }
  const SlabStats stats = store.slab_stats();
  const SizeClassStats* first = find_class(stats, 1);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->chunk_size, 96u);
  EXPECT_EQ(first->chunks_per_page, 10922u);
  EXPECT_EQ(first->total_pages, 1u);
  EXPECT_EQ(first->used_chunks, 2u);
  EXPECT_EQ(first->mem_requested, 70u + 96u);
  EXPECT_EQ(find_class(stats, 6)->mem_requested, 264u);
  EXPECT_EQ(find_class(stats, 39)->chunk_size, 524288u);
  EXPECT_EQ(find_class(stats, 39)->number, 2u);
  EXPECT_EQ(stats.page_size, 1u << 20);
}

TEST(StoreSlabs, DramItemsLandInMemcachedsClassNumbers) {
  ManualClock clock(1'700'000'000);
  StoreOptions options;
  options.memory_limit_bytes = 16u << 20;
  auto opened = make_store(clock, options);
  expect_memcached_classes(opened->store());
}

TEST(StoreSlabs, PoolItemsLandInMemcachedsClassNumbers) {
  ManualClock clock(1'700'000'000);
  StoreConfig config;
  config.engine = "wort";
  config.region = pm::PmRegion::in_memory(32u << 20);
  auto opened = open_store(std::move(config), clock);
  ASSERT_TRUE(opened->store().slab_settings().has_value());
  expect_memcached_classes(opened->store());
}

TEST_F(StoreTest, ClassCountersCountLikeMemcacheds) {
  ASSERT_EQ(put("a", "0123456789").status, StoreStatus::kStored);  // class 1
  ASSERT_EQ(put("n", "5").status, StoreStatus::kStored);           // class 1
  ASSERT_EQ(put("b", std::string(200, 'x'), StoreMode::kSet, 5).status,
            StoreStatus::kStored);  // class 6
  ASSERT_TRUE(get("a"));
  ASSERT_TRUE(get("b"));
  ASSERT_TRUE(get("b"));
  EXPECT_EQ(store_->touch("a", 100), StoreStatus::kTouched);
  ArithmeticRequest incr;
  incr.key = "n";
  incr.delta = 1;
  EXPECT_EQ(store_->arithmetic(incr).status, StoreStatus::kStored);
  const std::uint64_t cas = get("b")->cas;
  EXPECT_EQ(put("b", std::string(200, 'y'), StoreMode::kCas, 5, 0, cas + 100).status,
            StoreStatus::kExists);
  EXPECT_EQ(put("b", std::string(200, 'y'), StoreMode::kCas, 5, 0, cas).status,
            StoreStatus::kStored);
  DeleteRequest del;
  del.key = "a";
  EXPECT_EQ(store_->remove(del), StoreStatus::kDeleted);
  const SlabStats stats = store_->slab_stats();
  const SizeClassStats& one = stats.classes[0];
  const SizeClassStats& six = stats.classes[5];
  EXPECT_EQ(one.cmd_set, 2u);
  EXPECT_EQ(one.get_hits, 1u);
  EXPECT_EQ(one.touch_hits, 1u);
  EXPECT_EQ(one.incr_hits, 1u);
  EXPECT_EQ(one.delete_hits, 1u);
  EXPECT_EQ(one.number, 1u);   // "n"
  EXPECT_EQ(six.cmd_set, 3u);  // the set and both cas (memcached counts a refused cas too)
  EXPECT_EQ(six.get_hits, 3u);
  EXPECT_EQ(six.cas_badval, 1u);
  EXPECT_EQ(six.cas_hits, 1u);
  EXPECT_EQ(six.number, 1u);
  store_->reset_stats();
  EXPECT_EQ(store_->slab_stats().classes[5].get_hits, 0u);
  EXPECT_EQ(store_->slab_stats().classes[5].number, 1u);  // `stats reset` keeps the items
}

TEST_F(StoreTest, ExpiredItemsAreReclaimedPerClassAndAgeIsTheOldestAccess) {
  ASSERT_EQ(set("old", "v", 10), StoreStatus::kStored);
  ASSERT_EQ(set("keep", "v"), StoreStatus::kStored);
  clock_.advance(20);
  EXPECT_EQ(store_->slab_stats().classes[0].age, 20u);
  EXPECT_EQ(store_->reclaim_expired(100).reclaimed, 1u);
  const SizeClassStats c = store_->slab_stats().classes[0];
  EXPECT_EQ(c.reclaimed, 1u);
  EXPECT_EQ(c.expired_unfetched, 1u);
  EXPECT_EQ(c.number, 1u);
}

TEST(StoreSlabs, EvictionsAreCountedInTheClassTheyCameFrom) {
  ManualClock clock(1'700'000'000);
  StoreOptions options;
  options.memory_limit_bytes = 1u << 20;  // one page
  auto opened = make_store(clock, options);
  Store& store = opened->store();
  const std::string value(1000, 'v');  // class 12 (1184)
  for (int i = 0; i < 2000; ++i) {
    std::string key = "k";
    key += std::to_string(i);
    StoreRequest r;
    r.key = key;
    r.value = value;
    r.exptime = i % 2 == 0 ? 0 : 100000;
    ASSERT_EQ(store.store(r).status, StoreStatus::kStored) << i;
    clock.advance(1);
  }
  const SizeClassStats c = store.slab_stats().classes[11];
  EXPECT_GT(c.evicted, 0u);
  EXPECT_GT(c.evicted_nonzero, 0u);
  EXPECT_LT(c.evicted_nonzero, c.evicted);
  EXPECT_EQ(c.evicted_unfetched, c.evicted);
  EXPECT_GT(c.evicted_time, 0u);
  EXPECT_EQ(c.number + c.evicted, 2000u);
  EXPECT_EQ(store.stats().evictions, c.evicted);
}

// A pool formatted by a pmcached of layout 1 (before memcached's classes): superblock version 1,
// 256 KiB chunks with in-chunk headers. It opens, keeps its geometry (upgraded only to layout 2,
// which adds the high-water mark), and its items survive a restart.
TEST(StoreSlabs, LayoutOnePoolsKeepTheirGeometry) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("pmcached_layout1_" + std::to_string(::getpid()) + ".pool");
  constexpr std::size_t kSize = 16u << 20;
  {
    // What layout 1's format wrote: line 0 (magic, version 1, size, engine, XXH64), zeros after.
    std::vector<char> superblock(4096, 0);
    std::memcpy(superblock.data(), "PMCACHED", 8);
    const std::uint32_t version = 1;
    std::memcpy(superblock.data() + 8, &version, 4);
    const std::uint64_t size = kSize;
    std::memcpy(superblock.data() + 16, &size, 8);
    std::memcpy(superblock.data() + 24, "wort", 4);
    const std::uint64_t checksum = XXH64(superblock.data(), 56, 0);
    std::memcpy(superblock.data() + 56, &checksum, 8);
    std::ofstream out(path, std::ios::binary);
    out.write(superblock.data(), static_cast<std::streamsize>(superblock.size()));
    out.seekp(static_cast<std::streamoff>(kSize - 1));
    out.put('\0');
  }
  ManualClock clock(1'700'000'000);
  const auto open = [&] {
    StoreConfig config;
    config.engine = "wort";
    config.pool_path = path.string();
    return open_store(std::move(config), clock);
  };
  {
    auto opened = open();
    Store& store = opened->store();
    EXPECT_FALSE(store.slab_settings().has_value());
    for (int i = 0; i < 100; ++i) {
      std::string key = "key";
      key += std::to_string(i);
      const std::string value(static_cast<std::size_t>(i) * 50, 'v');
      StoreRequest r;
      r.key = key;
      r.value = value;
      ASSERT_EQ(store.store(r).status, StoreStatus::kStored);
    }
    const SlabStats stats = store.slab_stats();
    EXPECT_EQ(stats.page_size, 256u << 10);
    EXPECT_EQ(stats.classes.front().chunk_size, 64u);  // layout 1's smallest class
    opened->close();
  }
  {
    std::ifstream in(path, std::ios::binary);
    char head[12];
    in.read(head, sizeof head);
    std::uint32_t version = 0;
    std::memcpy(&version, head + 8, 4);
    EXPECT_EQ(version, 2u) << "layout 1 + the mark, not layout 3";
  }
  {
    auto opened = open();
    for (int i = 0; i < 100; ++i) {
      std::string key = "key";
      key += std::to_string(i);
      GetRequest g;
      g.key = key;
      std::size_t found = 0;
      ASSERT_EQ(opened->store().get(g, [&](const ItemView& v) { found = v.value.size(); }).status,
                StoreStatus::kHit);
      EXPECT_EQ(found, static_cast<std::size_t>(i) * 50);
    }
  }
  std::filesystem::remove(path);
}

// A pool keeps the slab settings it was made with, whatever a later start asks for.
TEST(StoreSlabs, ReopenedPoolKeepsItsSlabSettings) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("pmcached_slabs_" + std::to_string(::getpid()) + ".pool");
  std::filesystem::remove(path);
  ManualClock clock(1'700'000'000);
  const auto open = [&](double factor) {
    StoreConfig config;
    config.engine = "wort";
    config.pool_path = path.string();
    config.pool_bytes = 8u << 20;
    config.options.slabs.growth_factor = factor;
    return open_store(std::move(config), clock);
  };
  {
    auto opened = open(2.0);
    EXPECT_EQ(opened->store().slab_stats().classes[1].chunk_size, 192u);
    opened->close();
  }
  auto reopened = open(1.25);
  ASSERT_TRUE(reopened->store().slab_settings().has_value());
  EXPECT_EQ(reopened->store().slab_settings()->growth_factor, 2.0);
  EXPECT_EQ(reopened->store().slab_stats().classes[1].chunk_size, 192u);
  reopened.reset();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace pmcached::engine::testing

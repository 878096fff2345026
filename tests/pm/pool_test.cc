// Pool: format, reopen, the run-time fields, every refusal (which must change nothing), and
// crashes during formatting.
#include "engine/pm/pool.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "engine/pm/crash_simulator.h"

namespace pmcached::pm {
namespace {

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(in)), {});
}

void patch_file(const std::string& path, std::size_t offset, const void* data, std::size_t n) {
  std::fstream io(path, std::ios::binary | std::ios::in | std::ios::out);
  io.seekp(static_cast<std::streamoff>(offset));
  io.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
}

class PoolFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/pool_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    path_ = (dir_ / "pool").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void create(std::size_t size = 2 * kMinPoolSize) {
    auto pool = Pool::open_file(path_, size, "wort");
    ASSERT_TRUE(pool->created());
    pool->set_root(8192);
    pool->mark_clean();
  }

  // Opening for `engine` must throw PoolError with exactly `message` and change no byte.
  void expect_refused(std::string_view engine, const std::string& message) {
    const std::vector<char> before = read_file(path_);
    try {
      (void)Pool::open_file(path_, 2 * kMinPoolSize, engine);
      ADD_FAILURE() << "no PoolError";
    } catch (const PoolError& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
    EXPECT_TRUE(read_file(path_) == before) << "the refused open changed the file";
  }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(PoolFileTest, FormatsThenReopensWithFieldsIntact) {
  {
    auto pool = Pool::open_file(path_, kMinPoolSize, "wort");
    EXPECT_TRUE(pool->created());
    EXPECT_FALSE(pool->was_clean());
    EXPECT_EQ(pool->root(), 0u);
    EXPECT_EQ(pool->heap_begin(), kSuperblockSize);
    EXPECT_EQ(pool->heap_end(), kMinPoolSize);
    pool->set_root(4096 + 64);
    pool->set_cas_high_water(1234);
    pool->set_flush_state(-17, 99);
    EXPECT_EQ(*pool->root_field(), 4096u + 64);
  }
  auto pool = Pool::open_file(path_, 0, "wort");
  EXPECT_FALSE(pool->created());
  EXPECT_FALSE(pool->was_clean());  // never marked clean
  EXPECT_EQ(pool->root(), 4096u + 64);
  EXPECT_EQ(pool->cas_high_water(), 1234u);
  EXPECT_EQ(pool->flush_time(), -17);
  EXPECT_EQ(pool->flush_cas(), 99u);
  pool->set_flush_state(5, 6);
  EXPECT_EQ(pool->flush_time(), 5);
  EXPECT_EQ(pool->flush_cas(), 6u);
}

TEST_F(PoolFileTest, CleanFlagCycle) {
  create();
  {
    auto pool = Pool::open_file(path_, 0, "wort");
    EXPECT_TRUE(pool->was_clean());
    pool->mark_in_use();
    // A crash now (no mark_clean) must not look clean next time.
  }
  {
    auto pool = Pool::open_file(path_, 0, "wort");
    EXPECT_FALSE(pool->was_clean());
    pool->mark_clean();
  }
  auto pool = Pool::open_file(path_, 0, "wort");
  EXPECT_TRUE(pool->was_clean());
  EXPECT_EQ(pool->root(), 8192u);
}

// Issue 15: a pool that the caller refuses after opening it (say its index is corrupt) must be
// left byte-identical: opening writes nothing, the clean flag included, until mark_in_use().
TEST_F(PoolFileTest, OpeningAnExistingPoolWritesNothing) {
  create();
  const std::vector<char> before = read_file(path_);
  {
    auto pool = Pool::open_file(path_, 0, "wort");
    EXPECT_TRUE(pool->was_clean());
  }
  EXPECT_TRUE(read_file(path_) == before) << "opening changed the pool";
  auto pool = Pool::open_file(path_, 0, "wort");
  EXPECT_TRUE(pool->was_clean());
}

TEST_F(PoolFileTest, WrongEngineIsRefused) {
  create();
  expect_refused("fptree", "pool " + path_ + " was created by engine 'wort', not 'fptree'");
}

TEST_F(PoolFileTest, WrongLayoutVersionIsRefused) {
  create();
  const std::uint32_t version = 4;
  patch_file(path_, 8, &version, sizeof(version));
  expect_refused("wort",
                 "pool " + path_ + " has layout version 4, this pmcached reads versions 1 to 3");
}

TEST_F(PoolFileTest, CorruptSlabSettingsAreRefused) {
  create();
  const std::uint32_t min_size = 49;  // line 2: -n, covered by its own checksum
  patch_file(path_, 140, &min_size, sizeof(min_size));
  expect_refused("wort", "pool " + path_ + " superblock is corrupt (slab settings)");
}

TEST_F(PoolFileTest, NewPoolKeepsTheSlabSettingsItWasMadeWith) {
  SlabSettings made;
  made.growth_factor = 2;
  made.min_size = 100;
  made.chunk_max = 65536;
  {
    auto pool = Pool::open_file(path_, 2 * kMinPoolSize, "wort", made);
    EXPECT_EQ(pool->layout_version(), kLayoutVersion);
  }
  auto reopened = Pool::open_file(path_, 2 * kMinPoolSize, "wort", SlabSettings{});
  ASSERT_TRUE(reopened->slab_settings().has_value());
  EXPECT_EQ(*reopened->slab_settings(), made);
  const HeapGeometry geometry = reopened->heap_geometry();
  EXPECT_TRUE(geometry.header_table);
  EXPECT_EQ(geometry.chunk_size, 1u << 20);
  EXPECT_EQ(geometry.item_classes.front(), 152u);
  EXPECT_EQ(geometry.item_classes.back(), 65536u);
}

TEST_F(PoolFileTest, BadMagicIsRefused) {
  create();
  patch_file(path_, 0, "X", 1);
  expect_refused("wort", "pool " + path_ + " is not a pmcached pool");
}

TEST_F(PoolFileTest, CorruptSuperblockIsRefused) {
  create();
  patch_file(path_, 24 + 20, "!", 1);  // inside the engine name's padding
  expect_refused("wort", "pool " + path_ + " superblock is corrupt");
}

TEST_F(PoolFileTest, TruncatedFileIsRefused) {
  create();
  std::filesystem::resize_file(path_, kMinPoolSize + 4096);
  expect_refused("wort", "pool " + path_ + " is truncated or not a pmcached pool (" +
                             std::to_string(kMinPoolSize + 4096) + " bytes)");
  std::filesystem::resize_file(path_, 4096);
  expect_refused("wort", "pool " + path_ + " is truncated or not a pmcached pool (4096 bytes)");
}

TEST_F(PoolFileTest, ForeignFileIsNotFormatted) {
  std::vector<char> junk(kMinPoolSize, 0);
  std::memcpy(junk.data() + 100, "someone else's data", 19);  // zero magic, not a pool
  std::ofstream(path_, std::ios::binary)
      .write(junk.data(), static_cast<std::streamsize>(junk.size()));
  expect_refused("wort", "pool " + path_ + " is not a pmcached pool");
}

TEST_F(PoolFileTest, TooSmallNewPoolIsNotCreated) {
  EXPECT_THROW((void)Pool::open_file(path_, kMinPoolSize - 1, "wort"), PoolError);
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST(Pool, InMemoryReopenFromImage) {
  CrashSimulator sim(kMinPoolSize);
  auto pool = Pool::open_region(PmRegion::in_memory(kMinPoolSize, &sim), "wort");
  EXPECT_TRUE(pool->created());
  pool->set_root(5000);
  pool->set_cas_high_water(7);
  auto reopened = Pool::open_region(PmRegion::from_image(sim.image()), "wort");
  EXPECT_FALSE(reopened->created());
  EXPECT_FALSE(reopened->was_clean());
  EXPECT_EQ(reopened->root(), 5000u);
  EXPECT_EQ(reopened->cas_high_water(), 7u);
  try {
    (void)Pool::open_region(PmRegion::from_image(sim.image()), "dram");
    FAIL() << "no PoolError";
  } catch (const PoolError& e) {
    EXPECT_EQ(std::string(e.what()), "pool (in memory) was created by engine 'wort', not 'dram'");
  }
}

// A crash at every persistence point of formatting (and adversarial variants) leaves either
// an unformatted pool, which is formatted again, or a valid one.
TEST(Pool, CrashDuringFormattingLeavesUnformattedOrValidPool) {
  std::uint64_t points = 0;
  {
    CrashSimulator sim(kMinPoolSize);
    (void)Pool::open_region(PmRegion::in_memory(kMinPoolSize, &sim), "wort");
    points = sim.persistence_points();
  }
  ASSERT_GE(points, 2u);
  int reformatted = 0;
  int valid = 0;
  for (std::uint64_t k = 1; k <= points; ++k) {
    for (std::uint64_t seed = 0; seed <= 8; ++seed) {
      CrashSimulator sim(kMinPoolSize);
      sim.crash_at(k, seed != 0, seed);
      (void)Pool::open_region(PmRegion::in_memory(kMinPoolSize, &sim), "wort");
      ASSERT_TRUE(sim.crash_image().has_value());
      std::unique_ptr<Pool> pool;
      ASSERT_NO_THROW(pool = Pool::open_region(PmRegion::from_image(*sim.crash_image()), "wort"))
          << "point " << k << " seed " << seed;
      (pool->created() ? reformatted : valid) += 1;
      EXPECT_EQ(pool->root(), 0u);
      EXPECT_FALSE(pool->was_clean());
    }
  }
  EXPECT_GT(reformatted, 0);
  EXPECT_GT(valid, 0);
}

// Real PM persists 8-byte words, so an interrupted format may leave any subset of the
// superblock's words: each such pool is formatted again, for the same engine only.
TEST(Pool, TornFormatIsFormattedAgain) {
  std::vector<char> formatted;
  {
    CrashSimulator sim(kMinPoolSize);
    sim.crash_at(1);  // the fields are durable, the magic is not
    (void)Pool::open_region(PmRegion::in_memory(kMinPoolSize, &sim), "wort");
    ASSERT_TRUE(sim.crash_image().has_value());
    formatted = *sim.crash_image();
  }
  for (std::size_t keep_mask : {0x0u, 0x2u, 0x5u, 0xau, 0x1fu, 0x7eu, 0x80u}) {
    std::vector<char> torn(kMinPoolSize, 0);
    for (std::size_t word = 0; word < 8; ++word) {
      if ((keep_mask >> word & 1) != 0) {
        std::memcpy(torn.data() + word * 8, formatted.data() + word * 8, 8);
      }
    }
    auto pool = Pool::open_region(PmRegion::from_image(torn), "wort");
    EXPECT_TRUE(pool->created()) << keep_mask;
  }
  EXPECT_THROW((void)Pool::open_region(PmRegion::from_image(formatted), "fptree"), PoolError);
}

// set_flush_state changes (time, cas) as one pair: a crash shows the old or the new pair.
TEST(Pool, FlushStateChangesAtomically) {
  std::uint64_t before = 0;
  std::uint64_t after = 0;
  {
    CrashSimulator sim(kMinPoolSize);
    auto pool = Pool::open_region(PmRegion::in_memory(kMinPoolSize, &sim), "wort");
    pool->set_flush_state(10, 11);
    before = sim.persistence_points();
    pool->set_flush_state(20, 21);
    after = sim.persistence_points();
  }
  for (std::uint64_t k = before; k <= after; ++k) {
    for (std::uint64_t seed = 0; seed <= 8; ++seed) {
      CrashSimulator sim(kMinPoolSize);
      sim.crash_at(k, seed != 0, seed);
      auto pool = Pool::open_region(PmRegion::in_memory(kMinPoolSize, &sim), "wort");
      pool->set_flush_state(10, 11);
      pool->set_flush_state(20, 21);
      ASSERT_TRUE(sim.crash_image().has_value());
      auto restarted = Pool::open_region(PmRegion::from_image(*sim.crash_image()), "wort");
      const std::int64_t time = restarted->flush_time();
      const std::uint64_t cas = restarted->flush_cas();
      // An adversarial crash at `before` falls inside the first change: no flush state yet.
      const bool first_in_flight = sim.durable_point() < before;
      EXPECT_TRUE((time == 10 && cas == 11) || (time == 20 && cas == 21) ||
                  (first_in_flight && time == 0 && cas == 0))
          << "point " << k << ": " << time << "/" << cas;
    }
  }
}

}  // namespace
}  // namespace pmcached::pm

// PmRegion: libpmem file mappings (create, reopen, errors) and DRAM regions.
#include "engine/pm/pm_region.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "engine/pm/persistence.h"
#include "engine/pm/pool.h"

namespace pmcached::pm {
namespace {

class PmRegionFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/pm_region_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

// Issue 15: a pool in a directory that does not exist is not created (nor is the directory).
TEST_F(PmRegionFileTest, MissingDirectoryIsNotCreated) {
  const std::filesystem::path path = dir_ / "sub" / "dir" / "pool";
  bool created = false;
  EXPECT_THROW((void)PmRegion::map_file(path.string(), kMinPoolSize, created), PoolError);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "sub"));
}

TEST_F(PmRegionFileTest, CreatesReopensAndKeepsDataAfterSync) {
  const std::string path = (dir_ / "pool").string();
  {
    bool created = false;
    auto region = PmRegion::map_file(path, kMinPoolSize, created);
    EXPECT_TRUE(created);
    EXPECT_TRUE(region->is_file());
    EXPECT_EQ(region->size(), kMinPoolSize);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(region->base()) % 4096, 0u);
    std::memcpy(region->base() + 1000, "hello", 5);
    region->store_u64_persist(region->at<std::uint64_t>(4096), 0x1122334455667788ull);
    region->sync();
  }
  EXPECT_EQ(std::filesystem::file_size(path), kMinPoolSize);
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  ASSERT_EQ(bytes.size(), kMinPoolSize);
  EXPECT_EQ(std::memcmp(bytes.data() + 1000, "hello", 5), 0);
  bool created = true;
  auto region = PmRegion::map_file(path, 123, created);  // size ignored for an existing file
  EXPECT_FALSE(created);
  EXPECT_EQ(region->size(), kMinPoolSize);
  EXPECT_EQ(std::memcmp(region->base() + 1000, "hello", 5), 0);
  EXPECT_EQ(*region->at<std::uint64_t>(4096), 0x1122334455667788ull);
}

TEST_F(PmRegionFileTest, SmallFileIsReportedTruncated) {
  const std::string path = (dir_ / "small").string();
  { std::ofstream(path) << "not a pool"; }
  bool created = false;
  try {
    (void)PmRegion::map_file(path, kMinPoolSize, created);
    FAIL() << "no PoolError";
  } catch (const PoolError& e) {
    EXPECT_EQ(std::string(e.what()),
              "pool " + path + " is truncated or not a pmcached pool (10 bytes)");
  }
  EXPECT_EQ(std::filesystem::file_size(path), 10u);
}

TEST_F(PmRegionFileTest, UncreatableFileNamesPathAndReason) {
  const std::string blocker = (dir_ / "file").string();
  { std::ofstream(blocker) << "x"; }
  const std::string path = blocker + "/pool";  // parent is a regular file
  bool created = false;
  try {
    (void)PmRegion::map_file(path, kMinPoolSize, created);
    FAIL() << "no PoolError";
  } catch (const PoolError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
}

TEST_F(PmRegionFileTest, DirectoryIsNotAPool) {
  bool created = false;
  EXPECT_THROW((void)PmRegion::map_file(dir_.string(), kMinPoolSize, created), PoolError);
}

TEST(PmRegion, InMemoryIsZeroedAlignedAndCountsFlushes) {
  auto region = PmRegion::in_memory(1 << 16);
  EXPECT_FALSE(region->is_file());
  EXPECT_FALSE(region->is_pmem());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(region->base()) % kCacheLine, 0u);
  for (std::size_t i = 0; i < region->size(); ++i) ASSERT_EQ(region->base()[i], 0);
  reset_counters();
  region->persist(region->base() + 10, 100);  // lines 0 and 1
  region->store_u64_persist(region->at<std::uint64_t>(256), 5);
  region->sync();
  const OpCounters other = totals().by_kind[static_cast<std::size_t>(OpKind::kOther)];
  EXPECT_EQ(other.lines_flushed, 3u);
  EXPECT_EQ(other.fences, 2u);
  EXPECT_EQ(region->offset_of(region->at<char>(777)), 777u);
}

}  // namespace
}  // namespace pmcached::pm

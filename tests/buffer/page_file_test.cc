// PageFile: the header page, O_DIRECT and its fallback, growth by extents, and every refusal
// (which must leave the file byte-identical).
#include "engine/buffer/page_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <xxhash.h>

#include "engine/buffer/aligned_buffer.h"
#include "engine/buffer/direct_open.h"
#include "engine/pm/fault_injection.h"

namespace pmcached::buffer {
namespace {

constexpr std::size_t kFilePage = 4096;

std::uint64_t file_checksum(const std::string& path) {
  std::vector<char> bytes(std::filesystem::file_size(path));
  std::ifstream in(path, std::ios::binary);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return XXH64(bytes.data(), bytes.size(), bytes.size());
}

void patch_file(const std::string& path, std::size_t offset, const void* data, std::size_t n) {
  std::fstream io(path, std::ios::binary | std::ios::in | std::ios::out);
  io.seekp(static_cast<std::streamoff>(offset));
  io.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
}

// A file system that refuses O_DIRECT at open, as tmpfs before Linux 6.6 does.
int open_without_direct(const char* path, int flags, mode_t mode) {
  if ((flags & O_DIRECT) != 0) {
    errno = EINVAL;
    return -1;
  }
  return ::open(path, flags, mode);
}

class PageFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/page_file_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    options_.path = (dir_ / "pages").string();
    options_.page_size = kFilePage;
    options_.max_bytes = 4u << 20;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Opening must throw PageFileError with exactly `message` and change no byte of the file.
  void expect_refused(const PageFileOptions& options, const std::string& message) {
    const std::uint64_t before = file_checksum(options.path);
    const auto size = std::filesystem::file_size(options.path);
    try {
      (void)PageFile::open(options);
      ADD_FAILURE() << "no PageFileError";
    } catch (const PageFileError& e) {
      EXPECT_EQ(std::string(e.what()), message);
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
    EXPECT_EQ(std::filesystem::file_size(options.path), size);
    EXPECT_EQ(file_checksum(options.path), before) << "the refused open changed the file";
  }

  std::filesystem::path dir_;
  PageFileOptions options_;
};

TEST_F(PageFileTest, CreatesAHeaderPageAndReopensWithTheSameId) {
  std::uint64_t id = 0;
  {
    auto file = PageFile::open(options_);
    EXPECT_TRUE(file->created());
    EXPECT_EQ(file->page_count(), 1u);
    EXPECT_EQ(file->page_size(), kFilePage);
    EXPECT_EQ(file->max_pages(), (4u << 20) / kFilePage);
    EXPECT_NE(file->file_id(), 0u);
    id = file->file_id();
  }
  EXPECT_EQ(std::filesystem::file_size(options_.path), kFilePage);
  EXPECT_FALSE(std::filesystem::exists(options_.path + ".new"));
  auto file = PageFile::open(options_);
  EXPECT_FALSE(file->created());
  EXPECT_EQ(file->file_id(), id);
  EXPECT_EQ(file->page_count(), 1u);
}

TEST_F(PageFileTest, TwoFilesHaveDifferentIds) {
  auto a = PageFile::open(options_);
  PageFileOptions other = options_;
  other.path = (dir_ / "other").string();
  auto b = PageFile::open(other);
  EXPECT_NE(a->file_id(), b->file_id());
}

TEST_F(PageFileTest, UsesODirectWhereTheFileSystemHasIt) {
  const OpenedFile probe =
      open_direct_or_buffered((dir_ / "probe").string(), O_RDWR | O_CREAT, 0600, true);
  ASSERT_GE(probe.fd, 0);
  ::close(probe.fd);
  if (!probe.direct) GTEST_SKIP() << dir_ << " has no O_DIRECT";
  auto file = PageFile::open(options_);
  EXPECT_TRUE(file->direct_io());
  ASSERT_TRUE(file->extend(2));
  AlignedBuffer page(kFilePage);
  std::memset(page.data(), 0x5a, kFilePage);
  file->write(1, page.data());
  AlignedBuffer back(kFilePage);
  file->read(1, back.data());
  EXPECT_EQ(std::memcmp(page.data(), back.data(), kFilePage), 0);
}

TEST_F(PageFileTest, FallsBackToBufferedIoWhenOpenRefusesODirect) {
  options_.open_call = &open_without_direct;
  {
    auto file = PageFile::open(options_);  // creates
    EXPECT_FALSE(file->direct_io());
    ASSERT_TRUE(file->extend(2));
    AlignedBuffer page(kFilePage);
    std::memset(page.data(), 0x33, kFilePage);
    file->write(1, page.data());
    file->sync();
  }
  auto file = PageFile::open(options_);  // opens the existing file
  EXPECT_FALSE(file->direct_io());
  AlignedBuffer back(kFilePage);
  file->read(1, back.data());
  EXPECT_EQ(back.data()[kFilePage - 1], std::byte{0x33});
}

// Where this kernel's tmpfs still refuses O_DIRECT, the real fallback is exercised too.
TEST_F(PageFileTest, AFileInDevShmOpensWhetherOrNotTmpfsHasODirect) {
  if (!std::filesystem::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
  char pattern[] = "/dev/shm/page_file_test.XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::filesystem::path shm = pattern;
  options_.path = (shm / "pages").string();
  bool direct = true;
  {
    auto file = PageFile::open(options_);
    direct = file->direct_io();
    ASSERT_TRUE(file->extend(2));
    AlignedBuffer page(kFilePage);
    page.data()[100] = std::byte{7};
    file->write(1, page.data());
    AlignedBuffer back(kFilePage);
    file->read(1, back.data());
    EXPECT_EQ(back.data()[100], std::byte{7});
  }
  std::filesystem::remove_all(shm);
  RecordProperty("dev_shm_direct_io", direct ? "yes" : "no");
}

TEST_F(PageFileTest, ChoosesBufferedIoWhenAskedTo) {
  options_.direct_io = false;
  auto file = PageFile::open(options_);
  EXPECT_FALSE(file->direct_io());
}

TEST_F(PageFileTest, OpenDirectOrBufferedRetriesOnlyAfterEinval) {
  const std::string path = (dir_ / "probe").string();
  OpenedFile opened =
      open_direct_or_buffered(path, O_RDWR | O_CREAT, 0600, true, &open_without_direct);
  ASSERT_GE(opened.fd, 0);
  EXPECT_FALSE(opened.direct);
  ::close(opened.fd);
  // Any other error is not a reason to try again without O_DIRECT.
  opened = open_direct_or_buffered((dir_ / "missing" / "x").string(), O_RDWR, 0, true,
                                   &open_without_direct);
  EXPECT_EQ(opened.fd, -1);
  opened = open_direct_or_buffered((dir_ / "missing" / "x").string(), O_RDWR, 0, true);
  EXPECT_EQ(opened.fd, -1);
  EXPECT_EQ(errno, ENOENT);
}

TEST_F(PageFileTest, GrowsOneExtentAtATimeUpToTheMaximum) {
  options_.max_bytes = 600 * kFilePage;  // 2 extents of 256 pages and part of a third
  auto file = PageFile::open(options_);
  ASSERT_TRUE(file->extend(2));
  EXPECT_EQ(file->page_count(), 256u);
  EXPECT_EQ(std::filesystem::file_size(options_.path), 256 * kFilePage);
  ASSERT_TRUE(file->extend(256));  // already there
  EXPECT_EQ(file->page_count(), 256u);
  ASSERT_TRUE(file->extend(257));
  EXPECT_EQ(file->page_count(), 512u);
  EXPECT_FALSE(file->extend(601));
  EXPECT_EQ(file->page_count(), 512u);
  EXPECT_EQ(std::filesystem::file_size(options_.path), 512 * kFilePage);
  ASSERT_TRUE(file->extend(600));  // the last extent stops at the maximum
  EXPECT_EQ(file->page_count(), 600u);
  AlignedBuffer page(kFilePage);
  std::memset(page.data(), 1, kFilePage);
  file->read(599, page.data());  // zero-filled
  for (std::size_t i = 0; i < kFilePage; ++i) ASSERT_EQ(page.data()[i], std::byte{0});
}

TEST_F(PageFileTest, RefusesPagesPastTheEndAndPageZeroWrites) {
  auto file = PageFile::open(options_);
  AlignedBuffer page(kFilePage);
  EXPECT_THROW(file->read(1, page.data()), PageFileError);
  EXPECT_THROW(file->write(0, page.data()), PageFileError);
  EXPECT_THROW(file->write(1, page.data()), PageFileError);
}

TEST_F(PageFileTest, CountsReadsWritesAndSyncs) {
  auto file = PageFile::open(options_);
  ASSERT_TRUE(file->extend(3));
  AlignedBuffer page(kFilePage);
  file->write(1, page.data());
  file->write(2, page.data());
  file->read(1, page.data());
  file->sync();
  EXPECT_EQ(file->writes(), 2u);
  EXPECT_EQ(file->reads(), 1u);
  EXPECT_EQ(file->syncs(), 1u);
}

// Linux reports a lost write-back to one fdatasync and then marks the pages clean: a retry would
// succeed with the data gone. So after one failure every sync fails, and says why.
TEST_F(PageFileTest, ASyncThatFailedFailsEveryLaterSync) {
  auto file = PageFile::open(options_);
  ASSERT_TRUE(file->extend(3));
  AlignedBuffer page(kFilePage);
  file->write(1, page.data());
  file->sync();
  file->write(2, page.data());
  {
    const pm::FaultScope fault(pm::Fault::kSyncFails);
    EXPECT_THROW(file->sync(), PageFileError);
  }
  try {
    file->sync();
    FAIL() << "a sync after a failed one succeeded";
  } catch (const PageFileError& e) {
    EXPECT_NE(std::string(e.what()).find("an earlier fdatasync failed"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(file->syncs(), 1u);
  // Reads and writes go on: what they reach is the file's business, not a durability claim.
  file->read(1, page.data());
  file->write(2, page.data());
}

TEST_F(PageFileTest, RejectsAPageSizeThatIsNotAPowerOfTwoInRange) {
  for (std::size_t size : {std::size_t{2048}, std::size_t{12288}, std::size_t{131072}}) {
    options_.page_size = size;
    EXPECT_THROW((void)PageFile::open(options_), PageFileError) << size;
  }
  EXPECT_FALSE(std::filesystem::exists(options_.path));
}

TEST_F(PageFileTest, RefusesAForeignFileUnchanged) {
  {
    std::ofstream out(options_.path, std::ios::binary);
    const std::string text(3 * kFilePage, 'x');
    out << text;
  }
  expect_refused(options_, "page file " + options_.path + " is not a pmcached page file");
}

TEST_F(PageFileTest, RefusesAFileShorterThanAHeaderUnchanged) {
  {
    std::ofstream out(options_.path, std::ios::binary);
    out << "PMCPAGES";
  }
  expect_refused(options_, "page file " + options_.path +
                               " is truncated or not a pmcached page file (8 bytes)");
}

TEST_F(PageFileTest, RefusesAnotherPageSizeUnchanged) {
  (void)PageFile::open(options_);
  PageFileOptions other = options_;
  other.page_size = 16384;
  expect_refused(other,
                 "page file " + options_.path + " has 4096-byte pages, not 16384 (--page-size)");
}

// Version 1 is a file of an earlier build (XXH32 page checksums, which this build would read as
// corrupt pages); 3 is a later one.
TEST_F(PageFileTest, RefusesAnotherLayoutVersionUnchanged) {
  (void)PageFile::open(options_);
  for (const std::uint32_t version : {1u, 3u}) {
    patch_file(options_.path, 8, &version, sizeof(version));
    expect_refused(options_, "page file " + options_.path + " has layout version " +
                                 std::to_string(version) + ", this pmcached reads version 2");
  }
}

TEST_F(PageFileTest, RefusesACorruptHeaderUnchanged) {
  (void)PageFile::open(options_);
  char byte = 0;
  {
    std::ifstream in(options_.path, std::ios::binary);
    in.seekg(17);
    in.get(byte);
  }
  byte = static_cast<char>(byte ^ 0x10);  // one bit of the file id flipped
  patch_file(options_.path, 17, &byte, 1);
  expect_refused(options_, "page file " + options_.path + " header is corrupt");
}

TEST_F(PageFileTest, RefusesAFileThatIsNotAWholeNumberOfPagesUnchanged) {
  {
    auto file = PageFile::open(options_);
    ASSERT_TRUE(file->extend(2));
  }
  std::filesystem::resize_file(options_.path, 100 * kFilePage + 10);
  expect_refused(options_, "page file " + options_.path +
                               " is truncated: " + std::to_string(100 * kFilePage + 10) +
                               " bytes is not a whole number of 4096-byte pages");
}

TEST_F(PageFileTest, RefusesAFileShorterThanItsSyncedHeaderSaysUnchanged) {
  {
    auto file = PageFile::open(options_);
    ASSERT_TRUE(file->extend(2));
    file->sync();  // the header now records 256 pages
  }
  std::filesystem::resize_file(options_.path, 100 * kFilePage);
  expect_refused(options_,
                 "page file " + options_.path + " is truncated: 100 pages, its header says 256");
}

TEST_F(PageFileTest, AnExtensionNotYetSyncedMayBeLostWithoutRefusal) {
  {
    auto file = PageFile::open(options_);
    ASSERT_TRUE(file->extend(2));  // not synced: the header still says 1 page
  }
  std::filesystem::resize_file(options_.path, kFilePage);  // as if the extension never reached disk
  auto file = PageFile::open(options_);
  EXPECT_EQ(file->page_count(), 1u);
}

TEST_F(PageFileTest, RefusesADirectory) {
  std::filesystem::create_directory(options_.path);
  EXPECT_THROW((void)PageFile::open(options_), PageFileError);
}

}  // namespace
}  // namespace pmcached::buffer

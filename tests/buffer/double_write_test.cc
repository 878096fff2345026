// DoubleWriteBuffer: writes reach the file, the ring is reused only after an fdatasync, repair()
// restores torn and lost writes and leaves newer pages alone, ignores slots that fail their
// checksum, prefers the newest image of a page, refuses a root made for another page file or page
// size, survives a crash at every persistence point of a write (pm::CrashSimulator, plain and
// adversarial), makes the last run's writes durable before reusing the ring, never reuses it
// after a failed fdatasync, and takes writes from several threads at once.
#include "engine/buffer/double_write.h"

#include <string.h>  // memmem

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <xxhash.h>

#include "engine/buffer/aligned_buffer.h"
#include "engine/buffer/buffer_types.h"
#include "engine/buffer/page_checksum.h"
#include "engine/buffer/page_file.h"
#include "engine/pm/allocator.h"
#include "engine/pm/crash_simulator.h"
#include "engine/pm/fault_injection.h"
#include "engine/pm/pm_region.h"
#include "engine/pm/pool.h"

namespace pmcached::buffer {
namespace {

constexpr std::size_t kDwPoolBytes = 2 * pm::kMinPoolSize;  // the ring takes 2 MiB and more
constexpr std::string_view kDwEngine = "double-write-test";

// A page of `size` bytes for page `id` at `lsn`: contents derived from (id, lsn, tag), so that
// no two versions of a test share their bytes, and a checksum stamped as the buffer manager
// stamps it (the LSN first, then the checksum of the whole page).
AlignedBuffer dw_page(std::size_t size, PageId id, Lsn lsn, std::uint64_t tag = 0) {
  AlignedBuffer page(size);
  std::uint64_t x = (id * 0x9E3779B97F4A7C15ull) ^ (lsn * 0xC2B2AE3D27D4EB4Full) ^
                    (tag * 0x165667B19E3779F9ull) ^ 0x5DEECE66Dull;
  x |= 1;
  for (std::size_t i = kPageHeaderSize; i + 8 <= size; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(page.data() + i, &x, 8);
  }
  PageHeader header{};
  header.lsn = lsn;
  header.kind = 1;
  std::memcpy(page.data(), &header, sizeof header);
  header.checksum = page_checksum(page.data(), size);
  std::memcpy(page.data(), &header, sizeof header);
  return page;
}

AlignedBuffer dw_read(const PageFile& file, PageId id) {
  AlignedBuffer page(file.page_size());
  file.read(id, page.data());
  return page;
}

Lsn dw_lsn(const AlignedBuffer& page) {
  PageHeader header;
  std::memcpy(&header, page.data(), sizeof header);
  return header.lsn;
}

bool dw_checksum_holds(const AlignedBuffer& page, std::size_t size) {
  PageHeader header;
  std::memcpy(&header, page.data(), sizeof header);
  return header.checksum == page_checksum(page.data(), size);
}

bool dw_same(const AlignedBuffer& a, const AlignedBuffer& b, std::size_t size) {
  return std::memcmp(a.data(), b.data(), size) == 0;
}

// Page `id` of `file` is byte for byte `expected`.
::testing::AssertionResult file_page_is(const PageFile& file, PageId id,
                                        const AlignedBuffer& expected) {
  const std::size_t size = file.page_size();
  const AlignedBuffer got = dw_read(file, id);
  for (std::size_t i = 0; i < size; ++i) {
    if (got.data()[i] != expected.data()[i]) {
      return ::testing::AssertionFailure()
             << "page " << id << " differs at byte " << i << " (file LSN " << dw_lsn(got)
             << ", expected LSN " << dw_lsn(expected) << ", file checksum "
             << (dw_checksum_holds(got, size) ? "holds" : "fails") << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// Bytes [0, cut) of `first`, then the rest of `second`.
AlignedBuffer dw_mix(const AlignedBuffer& first, const AlignedBuffer& second, std::size_t size,
                     std::size_t cut) {
  AlignedBuffer out(size);
  std::memcpy(out.data(), first.data(), cut);
  std::memcpy(out.data() + cut, second.data() + cut, size - cut);
  return out;
}

// Tears page `id` of the file: its second half becomes `other`'s (another version of the page,
// or any other bytes), as a write interrupted after its first half would leave it.
void tear_file_page(PageFile& file, PageId id, const AlignedBuffer& other) {
  const std::size_t size = file.page_size();
  const AlignedBuffer now = dw_read(file, id);
  const AlignedBuffer torn = dw_mix(now, other, size, size / 2);
  ASSERT_FALSE(dw_checksum_holds(torn, size)) << "the torn page still has a valid checksum";
  file.write(id, torn.data());
}

// A pool in DRAM and its allocator.
struct DwPool {
  std::unique_ptr<pm::Pool> pool;
  std::unique_ptr<pm::Allocator> allocator;

  static DwPool fresh(pm::CrashSimulator* sim = nullptr) {
    DwPool out;
    out.pool = pm::Pool::open_region(pm::PmRegion::in_memory(kDwPoolBytes, sim), kDwEngine);
    out.allocator = std::make_unique<pm::Allocator>(*out.pool);
    return out;
  }
  // The pool restarted from `image`, without an allocator (see rebuild()).
  static DwPool restart(const std::vector<char>& image) {
    DwPool out;
    out.pool = pm::Pool::open_region(pm::PmRegion::from_image(image), kDwEngine);
    return out;
  }
  // An allocator rebuilt from the buffer's blocks, as a start-up would (failures reported).
  void rebuild(const DoubleWriteBuffer& buffer) {
    allocator = std::make_unique<pm::Allocator>(*pool);
    allocator->begin_rebuild();
    int blocks = 0;
    buffer.for_each_block([&](std::uint64_t offset) {
      ++blocks;
      if (!allocator->mark_reachable(offset, pm::BlockUse::kIndex)) {
        ADD_FAILURE() << "the buffer's block at " << offset << " is not a block of the heap";
      }
    });
    allocator->finish_rebuild();
    EXPECT_EQ(blocks, 2);
    EXPECT_EQ(allocator->stats().blocks_in_use, 2u);
  }
  [[nodiscard]] std::vector<char> memory() const {
    const pm::PmRegion& region = pool->region();
    return {region.base(), region.base() + region.size()};
  }
};

class DoubleWriteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/double_write_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A page file `name` of `page_size`-byte pages holding at least `pages` pages (header
  // included), buffered I/O.
  std::unique_ptr<PageFile> open_file(const std::string& name, std::size_t page_size,
                                      PageId pages) {
    PageFileOptions options;
    options.path = (dir_ / name).string();
    options.page_size = page_size;
    options.max_bytes = 64u << 20;
    options.direct_io = false;
    auto file = PageFile::open(options);
    EXPECT_TRUE(file->extend(pages));
    EXPECT_GE(file->page_count(), pages);
    return file;
  }

  // What most tests start from: a page file "pages", a fresh pool and a buffer made in it.
  struct Rig {
    std::unique_ptr<PageFile> file;
    DwPool pool;
    std::unique_ptr<DoubleWriteBuffer> dw;
  };
  Rig rig(std::size_t page_size, PageId pages) {
    Rig r;
    r.file = open_file("pages", page_size, pages);
    r.pool = DwPool::fresh();
    r.dw = DoubleWriteBuffer::create(*r.pool.pool, *r.pool.allocator, *r.file);
    return r;
  }

  std::filesystem::path dir_;
};

TEST_F(DoubleWriteTest, AWriteReachesTheFile) {
  constexpr std::size_t kPage = 16 * 1024;
  auto [file, p, dw] = rig(kPage, 8);
  EXPECT_EQ(dw->stats().slots, kDoubleWriteBytes / kPage);
  EXPECT_EQ(dw->stats().writes, 0u);

  const AlignedBuffer a = dw_page(kPage, 3, 100);
  const AlignedBuffer b = dw_page(kPage, 5, 200);
  const std::uint64_t file_writes = file->writes();
  dw->write(3, a.data());
  EXPECT_TRUE(file_page_is(*file, 3, a));
  EXPECT_EQ(dw->stats().writes, 1u);
  dw->write(5, b.data());
  EXPECT_TRUE(file_page_is(*file, 5, b));
  EXPECT_TRUE(file_page_is(*file, 3, a));
  EXPECT_EQ(dw->stats().writes, 2u);
  EXPECT_EQ(file->writes() - file_writes, 2u);
  EXPECT_EQ(dw->stats().syncs, 0u);
  // Nothing to repair: the file holds every slot's image at its LSN.
  EXPECT_EQ(dw->repair(), 0u);
  EXPECT_EQ(dw->stats().pages_repaired, 0u);
  EXPECT_TRUE(file_page_is(*file, 3, a));
  EXPECT_TRUE(file_page_is(*file, 5, b));
}

TEST_F(DoubleWriteTest, TheRingIsReusedOnlyAfterAnFdatasync) {
  constexpr std::size_t kPage = kMaxPageSize;  // the fewest slots
  const std::size_t slots = std::max(kDoubleWriteBytes / kPage, DoubleWriteBuffer::kMinSlots);
  auto [file, p, dw] = rig(kPage, slots + 3);
  ASSERT_EQ(dw->stats().slots, slots);
  const std::uint64_t syncs_before = file->syncs();

  std::vector<AlignedBuffer> pages;
  for (PageId id = 1; id <= slots + 1; ++id) pages.push_back(dw_page(kPage, id, 10 * id));
  // Every slot once: no fdatasync yet.
  for (PageId id = 1; id <= slots; ++id) dw->write(id, pages[id - 1].data());
  EXPECT_EQ(dw->stats().syncs, 0u);
  EXPECT_EQ(file->syncs(), syncs_before);
  // One more: the ring starts again behind one fdatasync.
  dw->write(slots + 1, pages[slots].data());
  EXPECT_EQ(dw->stats().syncs, 1u);
  EXPECT_EQ(file->syncs(), syncs_before + 1);
  EXPECT_EQ(dw->stats().writes, slots + 1);
  for (PageId id = 1; id <= slots + 1; ++id) {
    EXPECT_TRUE(file_page_is(*file, id, pages[id - 1]));
  }

  // It is a ring: the last write took the first slot, so page 1's image is gone from the pool
  // while page 2's is still there. Tear both: repair() restores page 2 only.
  tear_file_page(*file, 1, dw_page(kPage, 1, 999, 7));
  tear_file_page(*file, 2, dw_page(kPage, 2, 999, 7));
  EXPECT_EQ(dw->repair(), 1u);
  EXPECT_TRUE(file_page_is(*file, 2, pages[1]));
  EXPECT_FALSE(dw_checksum_holds(dw_read(*file, 1), kPage));
}

TEST_F(DoubleWriteTest, RepairRestoresATornPage) {
  constexpr std::size_t kPage = 16 * 1024;
  auto [file, p, dw] = rig(kPage, 8);
  const AlignedBuffer v1 = dw_page(kPage, 4, 100);
  const AlignedBuffer v2 = dw_page(kPage, 4, 200);
  dw->write(4, v1.data());
  dw->write(4, v2.data());
  ASSERT_TRUE(file_page_is(*file, 4, v2));
  // The second half of the page becomes v1's again, as a torn write of v2 over v1 leaves it.
  tear_file_page(*file, 4, v1);
  const std::uint64_t syncs = file->syncs();
  EXPECT_EQ(dw->repair(), 1u);
  EXPECT_EQ(dw->stats().pages_repaired, 1u);
  EXPECT_TRUE(file_page_is(*file, 4, v2));
  EXPECT_TRUE(dw_checksum_holds(dw_read(*file, 4), kPage));
  EXPECT_EQ(file->syncs(), syncs + 1) << "repair() must fdatasync what it wrote";
}

TEST_F(DoubleWriteTest, RepairRestoresALostWrite) {
  constexpr std::size_t kPage = 16 * 1024;
  auto [file, p, dw] = rig(kPage, 8);
  const AlignedBuffer v1 = dw_page(kPage, 2, 100);
  const AlignedBuffer v2 = dw_page(kPage, 2, 200);
  dw->write(2, v2.data());
  // The file lost v2: it holds the older v1, intact.
  file->write(2, v1.data());
  ASSERT_TRUE(file_page_is(*file, 2, v1));
  EXPECT_EQ(dw->repair(), 1u);
  EXPECT_TRUE(file_page_is(*file, 2, v2));
}

TEST_F(DoubleWriteTest, RepairLeavesANewerPageAlone) {
  constexpr std::size_t kPage = 16 * 1024;
  auto [file, p, dw] = rig(kPage, 8);
  const AlignedBuffer v1 = dw_page(kPage, 6, 100);
  const AlignedBuffer v2 = dw_page(kPage, 6, 200);
  dw->write(6, v1.data());
  file->write(6, v2.data());
  const std::uint64_t writes = file->writes();
  EXPECT_EQ(dw->repair(), 0u);
  EXPECT_TRUE(file_page_is(*file, 6, v2));
  EXPECT_EQ(file->writes(), writes);
}

TEST_F(DoubleWriteTest, ASlotThatFailsItsChecksumIsIgnored) {
  constexpr std::size_t kPage = 16 * 1024;
  auto [file, p, dw] = rig(kPage, 8);
  AlignedBuffer v1 = dw_page(kPage, 3, 100);
  // A distinctive run of bytes in the page, to find its slot in the pool.
  constexpr std::size_t kMarkAt = 4000;
  constexpr std::size_t kMarkLength = 64;
  for (std::size_t i = 0; i < kMarkLength; ++i) {
    v1.data()[kMarkAt + i] = static_cast<std::byte>(0xD0 ^ (i * 37));
  }
  PageHeader header;
  std::memcpy(&header, v1.data(), sizeof header);
  header.checksum = page_checksum(v1.data(), kPage);
  std::memcpy(v1.data(), &header, sizeof header);
  dw->write(3, v1.data());

  pm::PmRegion& region = p.pool->region();
  const void* first = memmem(region.base(), region.size(), v1.data() + kMarkAt, kMarkLength);
  ASSERT_NE(first, nullptr) << "the page's image is not in the pool";
  auto* mark = static_cast<char*>(const_cast<void*>(first));
  const std::size_t after = static_cast<std::size_t>(mark - region.base()) + 1;
  EXPECT_EQ(memmem(region.base() + after, region.size() - after, v1.data() + kMarkAt, kMarkLength),
            nullptr)
      << "the page's bytes are in the pool twice";
  // The whole image is there, then one byte of it flips.
  ASSERT_EQ(std::memcmp(mark - kMarkAt, v1.data(), kPage), 0);
  mark[kMarkLength / 2] = static_cast<char>(mark[kMarkLength / 2] ^ 0x01);

  const AlignedBuffer other = dw_page(kPage, 3, 50, 9);
  tear_file_page(*file, 3, other);
  const AlignedBuffer torn = dw_read(*file, 3);
  EXPECT_EQ(dw->repair(), 0u);
  EXPECT_TRUE(file_page_is(*file, 3, torn)) << "repair() installed a corrupt image";
  EXPECT_FALSE(dw_checksum_holds(dw_read(*file, 3), kPage));
}

TEST_F(DoubleWriteTest, TheNewestOfSeveralImagesOfAPageWins) {
  constexpr std::size_t kPage = 16 * 1024;
  auto [file, p, dw] = rig(kPage, 8);
  const AlignedBuffer v1 = dw_page(kPage, 7, 100);
  const AlignedBuffer v2 = dw_page(kPage, 7, 200);
  const AlignedBuffer v3 = dw_page(kPage, 7, 300);
  dw->write(7, v1.data());
  dw->write(7, v2.data());
  dw->write(7, v3.data());
  tear_file_page(*file, 7, v1);
  EXPECT_EQ(dw->repair(), 1u);
  EXPECT_TRUE(file_page_is(*file, 7, v3));
}

// The newest image must win by its LSN, not by its place in the ring: after a wrap the newest
// image sits in the first slot, the two older ones in the last two.
TEST_F(DoubleWriteTest, TheNewestImageWinsAfterTheRingWrapped) {
  constexpr std::size_t kPage = kMaxPageSize;
  const std::size_t slots = std::max(kDoubleWriteBytes / kPage, DoubleWriteBuffer::kMinSlots);
  constexpr PageId kTarget = 1;
  auto [file, p, dw] = rig(kPage, slots + 3);
  for (std::size_t i = 0; i < slots - 2; ++i) {
    const PageId id = 2 + i;
    dw->write(id, dw_page(kPage, id, 10).data());
  }
  const AlignedBuffer v1 = dw_page(kPage, kTarget, 100);
  const AlignedBuffer v2 = dw_page(kPage, kTarget, 200);
  const AlignedBuffer v3 = dw_page(kPage, kTarget, 300);
  dw->write(kTarget, v1.data());  // the last-but-one slot
  dw->write(kTarget, v2.data());  // the last slot
  EXPECT_EQ(dw->stats().syncs, 0u);
  dw->write(kTarget, v3.data());  // the first slot, after the ring's fdatasync
  EXPECT_EQ(dw->stats().syncs, 1u);
  tear_file_page(*file, kTarget, v2);
  EXPECT_EQ(dw->repair(), 1u);
  EXPECT_TRUE(file_page_is(*file, kTarget, v3));
}

// The exception `open()` throws, or "" if it opened.
std::string dw_open_error(pm::Pool& pool, std::uint64_t root, PageFile& file) {
  try {
    (void)DoubleWriteBuffer::open(pool, root, file);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST_F(DoubleWriteTest, OpenRefusesAnotherPageFileOrPageSize) {
  constexpr std::size_t kPage = 16 * 1024;
  auto file = open_file("pages", kPage, 8);
  auto other = open_file("other-pages", kPage, 8);
  auto small = open_file("small-pages", 4096, 8);
  ASSERT_NE(file->file_id(), other->file_id());
  DwPool p = DwPool::fresh();
  auto dw = DoubleWriteBuffer::create(*p.pool, *p.allocator, *file);
  const std::uint64_t root = dw->root_offset();
  dw.reset();

  EXPECT_THROW((void)DoubleWriteBuffer::open(*p.pool, root, *other), std::runtime_error);
  EXPECT_NE(dw_open_error(*p.pool, root, *other).find(std::to_string(other->file_id())),
            std::string::npos)
      << dw_open_error(*p.pool, root, *other);
  EXPECT_THROW((void)DoubleWriteBuffer::open(*p.pool, root, *small), std::runtime_error);
  EXPECT_EQ(dw_open_error(*p.pool, root, *file), "");

  // A root for this page file but another page size (written as create() would have, checksum
  // included: the layout in double_write.cc), so that only the page size differs.
  char* bytes = p.pool->region().at<char>(root);
  char saved[64];
  std::memcpy(saved, bytes, sizeof saved);
  const std::uint32_t page_size = 8192;
  std::memcpy(bytes + 16, &page_size, sizeof page_size);
  const std::uint64_t checksum = XXH64(bytes, 48, 0);
  std::memcpy(bytes + 48, &checksum, sizeof checksum);
  EXPECT_THROW((void)DoubleWriteBuffer::open(*p.pool, root, *file), std::runtime_error);
  const std::string why = dw_open_error(*p.pool, root, *file);
  EXPECT_NE(why.find("8192"), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;

  // A root whose checksum fails, and an offset outside the heap.
  std::memcpy(bytes, saved, sizeof saved);
  bytes[26] = static_cast<char>(bytes[26] ^ 0x40);  // region_offset
  EXPECT_THROW((void)DoubleWriteBuffer::open(*p.pool, root, *file), std::runtime_error);
  std::memcpy(bytes, saved, sizeof saved);
  EXPECT_THROW((void)DoubleWriteBuffer::open(*p.pool, 8, *file), std::runtime_error);
  EXPECT_THROW((void)DoubleWriteBuffer::open(*p.pool, p.pool->heap_end(), *file),
               std::runtime_error);
  EXPECT_EQ(dw_open_error(*p.pool, root, *file), "");
}

TEST_F(DoubleWriteTest, ReopenedAfterACrashItRepairs) {
  constexpr std::size_t kPage = 16 * 1024;
  auto file = open_file("pages", kPage, 8);
  const AlignedBuffer v1 = dw_page(kPage, 5, 100);
  const AlignedBuffer v2 = dw_page(kPage, 5, 200);
  const AlignedBuffer q = dw_page(kPage, 6, 150);
  std::vector<char> image;
  std::uint64_t root = 0;
  {
    DwPool p = DwPool::fresh();
    auto dw = DoubleWriteBuffer::create(*p.pool, *p.allocator, *file);
    root = dw->root_offset();
    dw->write(5, v1.data());
    dw->write(6, q.data());
    dw->write(5, v2.data());
    image = p.memory();
  }
  // The crash tore page 5 and lost page 6's write.
  tear_file_page(*file, 5, v1);
  file->write(6, dw_page(kPage, 6, 50).data());

  DwPool p = DwPool::restart(image);
  auto dw = DoubleWriteBuffer::open(*p.pool, root, *file);
  ASSERT_NE(dw, nullptr);
  EXPECT_EQ(dw->root_offset(), root);
  p.rebuild(*dw);
  EXPECT_EQ(dw->stats().slots, kDoubleWriteBytes / kPage);
  EXPECT_EQ(dw->repair(), 2u);
  EXPECT_EQ(dw->stats().pages_repaired, 2u);
  EXPECT_TRUE(file_page_is(*file, 5, v2));
  EXPECT_TRUE(file_page_is(*file, 6, q));
  // The reopened buffer writes on, and a second repair finds nothing to do.
  const AlignedBuffer v3 = dw_page(kPage, 5, 300);
  dw->write(5, v3.data());
  EXPECT_TRUE(file_page_is(*file, 5, v3));
  EXPECT_EQ(dw->repair(), 0u);
  EXPECT_TRUE(file_page_is(*file, 5, v3));
}

// A process that died (not the machine) leaves its last writes in the page cache, intact but
// not durable. The next start finds nothing to repair, yet must fdatasync before its first write
// reuses slot 0: until then, those slots are all that would repair the writes after a power
// failure.
TEST_F(DoubleWriteTest, RepairMakesTheLastRunsWritesDurableEvenWithNothingToRepair) {
  constexpr std::size_t kPage = 16 * 1024;
  auto file = open_file("pages", kPage, 8);
  std::vector<char> image;
  std::uint64_t root = 0;
  {
    DwPool p = DwPool::fresh();
    auto dw = DoubleWriteBuffer::create(*p.pool, *p.allocator, *file);
    root = dw->root_offset();
    dw->write(5, dw_page(kPage, 5, 100).data());
    image = p.memory();
  }
  DwPool p = DwPool::restart(image);
  auto dw = DoubleWriteBuffer::open(*p.pool, root, *file);
  p.rebuild(*dw);
  const std::uint64_t syncs = file->syncs();
  EXPECT_EQ(dw->repair(), 0u);
  EXPECT_EQ(file->syncs(), syncs + 1) << "the ring starts again over writes not yet durable";
}

// A failed fdatasync may have lost writes (Linux reports it once, then marks the pages clean): the
// ring must not start again over their images on a retry that reports success.
TEST_F(DoubleWriteTest, AfterAFailedFdatasyncTheRingIsNotReused) {
  constexpr std::size_t kPage = kMaxPageSize;  // the fewest slots
  const std::size_t slots = std::max(kDoubleWriteBytes / kPage, DoubleWriteBuffer::kMinSlots);
  auto [file, p, dw] = rig(kPage, slots + 3);
  std::vector<AlignedBuffer> pages;
  for (PageId id = 1; id <= slots + 1; ++id) pages.push_back(dw_page(kPage, id, 10 * id));
  for (PageId id = 1; id <= slots; ++id) dw->write(id, pages[id - 1].data());
  {
    const pm::FaultScope fault(pm::Fault::kSyncFails);
    EXPECT_THROW(dw->write(slots + 1, pages[slots].data()), PageFileError);
  }
  // The device works again; the writes of the failed sync's time may still be lost.
  EXPECT_THROW(dw->write(slots + 1, pages[slots].data()), PageFileError);
  EXPECT_THROW(file->sync(), PageFileError);
  EXPECT_EQ(dw->stats().syncs, 0u);
  // Every slot still holds its image: a torn page is repaired from it at the next start.
  tear_file_page(*file, 1, dw_page(kPage, 1, 999, 7));
  const std::uint64_t root = dw->root_offset();
  const std::vector<char> image = p.memory();
  dw.reset();
  file.reset();
  DwPool restarted = DwPool::restart(image);
  auto reopened = open_file("pages", kPage, slots + 3);
  auto again = DoubleWriteBuffer::open(*restarted.pool, root, *reopened);
  restarted.rebuild(*again);
  EXPECT_EQ(again->repair(), 1u);
  EXPECT_TRUE(file_page_is(*reopened, 1, pages[0]));
}

// --- Crash at every persistence point of a write -------------------------------------------------

// What the ring and the file hold before write(target, v2).
enum class DwHistory {
  kV1OnlyInTheFile,      // v1 written to the file directly and synced; the ring is fresh
  kV1InTheRing,          // v1 written through the buffer (a slot holds it)
  kV2ReusesV1sSlot,      // v1 through the buffer, then the ring filled: v2 reuses v1's slot
  kV2ReusesAnotherSlot,  // the ring filled with other pages: v2 reuses one of theirs
};

constexpr DwHistory kDwHistories[] = {DwHistory::kV1OnlyInTheFile, DwHistory::kV1InTheRing,
                                      DwHistory::kV2ReusesV1sSlot, DwHistory::kV2ReusesAnotherSlot};

const char* dw_history_name(DwHistory h) {
  switch (h) {
    case DwHistory::kV1OnlyInTheFile: return "v1 only in the file";
    case DwHistory::kV1InTheRing: return "v1 in the ring";
    case DwHistory::kV2ReusesV1sSlot: return "v2 reuses v1's slot";
    case DwHistory::kV2ReusesAnotherSlot: return "v2 reuses another page's slot";
  }
  return "?";
}

// The file's page `target` after the crash, when the crash came after the slot's fence (before
// it, the file write had not begun: the page is v1, untouched).
enum class DwFileState { kV1, kTornV2ThenV1, kTornV1ThenV2, kTornV2ThenGarbage, kV2 };

constexpr DwFileState kDwFileStates[] = {DwFileState::kV1, DwFileState::kTornV2ThenV1,
                                         DwFileState::kTornV1ThenV2,
                                         DwFileState::kTornV2ThenGarbage, DwFileState::kV2};

const char* dw_file_state_name(DwFileState s) {
  switch (s) {
    case DwFileState::kV1: return "v1 (the write had not begun)";
    case DwFileState::kTornV2ThenV1: return "torn: v2's first half, v1's second";
    case DwFileState::kTornV1ThenV2: return "torn: v1's first quarter, then v2";
    case DwFileState::kTornV2ThenGarbage: return "torn: v2's first half, then other bytes";
    case DwFileState::kV2: return "v2 (the write completed)";
  }
  return "?";
}

class DoubleWriteCrashTest : public DoubleWriteTest {
 protected:
  static constexpr std::size_t kPage = kMaxPageSize;  // 32 slots: the ring fills quickly
  static constexpr PageId kTarget = 1;

  void SetUp() override {
    DoubleWriteTest::SetUp();
    slots_ = std::max(kDoubleWriteBytes / kPage, DoubleWriteBuffer::kMinSlots);
    file_ = open_file("pages", kPage, slots_ + 4);
    v1_ = dw_page(kPage, kTarget, 1000);
    v2_ = dw_page(kPage, kTarget, 2000);
  }

  struct Run {
    std::uint64_t root = 0;
    std::uint64_t before = 0, after = 0;  // persistence points around write(target, v2)
    std::uint64_t durable = 0;            // the last point surely in the crash image
    std::optional<std::vector<char>> crash_image;
    std::vector<AlignedBuffer> others;  // every other page of the file as written (index = id)
  };

  // A new pool and buffer, `history`, then write(target, v2), crashed at `point` (0: not).
  Run run(DwHistory history, std::uint64_t point, bool adversarial, std::uint64_t seed) {
    pm::CrashSimulator sim(kDwPoolBytes);
    DwPool p = DwPool::fresh(&sim);
    auto dw = DoubleWriteBuffer::create(*p.pool, *p.allocator, *file_);
    EXPECT_EQ(dw->stats().slots, slots_);
    Run out;
    out.root = dw->root_offset();
    out.others.resize(file_->page_count());
    // Every other page gets contents of this run, written to the file directly and synced.
    for (PageId id = 2; id < file_->page_count(); ++id) {
      out.others[id] = dw_page(kPage, id, 5, point * 16 + seed);
      file_->write(id, out.others[id].data());
    }
    switch (history) {
      case DwHistory::kV1OnlyInTheFile: file_->write(kTarget, v1_.data()); break;
      case DwHistory::kV1InTheRing: dw->write(kTarget, v1_.data()); break;
      case DwHistory::kV2ReusesV1sSlot:
        dw->write(kTarget, v1_.data());
        for (PageId id = 2; id < 2 + slots_ - 1; ++id) dw->write(id, out.others[id].data());
        break;
      case DwHistory::kV2ReusesAnotherSlot:
        file_->write(kTarget, v1_.data());
        for (PageId id = 2; id < 2 + slots_; ++id) dw->write(id, out.others[id].data());
        break;
    }
    file_->sync();
    out.before = sim.persistence_points();
    if (point != 0) sim.crash_at(point, adversarial, seed);
    dw->write(kTarget, v2_.data());
    out.after = sim.persistence_points();
    const bool reused =
        history == DwHistory::kV2ReusesV1sSlot || history == DwHistory::kV2ReusesAnotherSlot;
    EXPECT_EQ(dw->stats().syncs, reused ? 1u : 0u) << dw_history_name(history);
    out.crash_image = sim.crash_image();
    out.durable = point == 0 ? out.after : sim.durable_point();
    return out;
  }

  std::size_t slots_ = 0;
  std::unique_ptr<PageFile> file_;
  AlignedBuffer v1_, v2_;
};

// write(id, v2) over a file holding v1 is crashed at each of its persistence points, plainly and
// adversarially (while the fence drains). The pool restarts from the crash image, the buffer is
// opened from its root and repair() runs. The file's page must then be exactly v1 or exactly v2,
// with a valid checksum, never torn; and v2 whenever the crash came after the slot's fence.
//
// The file is not under the simulator: the crash only stops the pool. So the file's page is set
// to what the crash could have left there. The file write starts only after the slot's fence:
// if the crash image does not surely hold that fence (durable point below it), the page is v1
// untouched; if it does, the page is v1 (the write had not begun), torn between v1 and v2 or
// other bytes, or v2. The fence is the last persistence point of write() (a dry run counts them:
// the header promises one fence), so "after the fence" is durable_point() >= the dry run's last
// point: a plain crash at that point, not an adversarial one (which falls while it drains).
TEST_F(DoubleWriteCrashTest, EveryPersistencePointOfAWritePlainAndAdversarial) {
  int crashes = 0;
  int failures = 0;
  int after_fence = 0;
  int ended_v1 = 0;
  for (const DwHistory history : kDwHistories) {
    const Run dry = run(history, 0, false, 0);
    ASSERT_EQ(dry.after - dry.before, 1u)
        << dw_history_name(history) << ": write() should make exactly one persistence point";
    ASSERT_TRUE(file_page_is(*file_, kTarget, v2_));
    const std::uint64_t fence = dry.after;
    for (std::uint64_t k = dry.before + 1; k <= dry.after; ++k) {
      for (std::uint64_t seed = 0; seed <= 8; ++seed) {
        const bool adversarial = seed != 0;
        const Run r = run(history, k, adversarial, seed);
        EXPECT_EQ(r.before, dry.before);
        EXPECT_EQ(r.after, dry.after);
        std::ostringstream where;
        where << dw_history_name(history) << ", crash at point " << k
              << (adversarial ? " adversarial seed " + std::to_string(seed) : std::string());
        if (!r.crash_image) {
          ADD_FAILURE() << where.str() << ": never reached";
          continue;
        }
        const bool slot_durable = r.durable >= fence;
        std::vector<DwFileState> states = {DwFileState::kV1};
        if (slot_durable) states.assign(std::begin(kDwFileStates), std::end(kDwFileStates));
        for (const DwFileState state : states) {
          ++crashes;
          const std::string at = where.str() + ", file page " + dw_file_state_name(state);
          switch (state) {
            case DwFileState::kV1: file_->write(kTarget, v1_.data()); break;
            case DwFileState::kTornV2ThenV1:
              file_->write(kTarget, dw_mix(v2_, v1_, kPage, kPage / 2).data());
              break;
            case DwFileState::kTornV1ThenV2:
              file_->write(kTarget, dw_mix(v1_, v2_, kPage, kPage / 4).data());
              break;
            case DwFileState::kTornV2ThenGarbage:
              file_->write(kTarget,
                           dw_mix(v2_, dw_page(kPage, 77, 77, seed), kPage, kPage / 2).data());
              break;
            case DwFileState::kV2: file_->write(kTarget, v2_.data()); break;
          }
          if (state != DwFileState::kV1 && state != DwFileState::kV2) {
            ASSERT_FALSE(dw_checksum_holds(dw_read(*file_, kTarget), kPage)) << at;
          }
          DwPool p = DwPool::restart(*r.crash_image);
          std::unique_ptr<DoubleWriteBuffer> dw;
          try {
            dw = DoubleWriteBuffer::open(*p.pool, r.root, *file_);
          } catch (const std::exception& e) {
            ++failures;
            ADD_FAILURE() << at << ": open() threw " << e.what();
            continue;
          }
          p.rebuild(*dw);
          const std::size_t repaired = dw->repair();
          const AlignedBuffer got = dw_read(*file_, kTarget);
          const bool is_v1 = dw_same(got, v1_, kPage);
          const bool is_v2 = dw_same(got, v2_, kPage);
          std::ostringstream error;
          if (!dw_checksum_holds(got, kPage)) error << "the page is torn (bad checksum); ";
          if (!is_v1 && !is_v2)
            error << "the page is neither v1 nor v2 (LSN " << dw_lsn(got) << "); ";
          if (slot_durable && !is_v2) error << "the slot was durable but the page is not v2; ";
          if (state == DwFileState::kV2 && repaired != 0) {
            error << "repair() rewrote " << repaired << " pages of an intact file; ";
          }
          for (PageId id = 2; id < file_->page_count(); ++id) {
            if (!file_page_is(*file_, id, r.others[id])) {
              error << "repair() changed page " << id << "; ";
              break;
            }
          }
          if (!error.str().empty()) {
            ++failures;
            ADD_FAILURE() << at << ": " << error.str();
          }
          after_fence += slot_durable;
          ended_v1 += is_v1;
        }
      }
    }
  }
  EXPECT_EQ(failures, 0) << "of " << crashes << " crashes";
  // Each history: one plain crash after the fence (5 file states) and 8 adversarial ones.
  EXPECT_EQ(crashes, 4 * (5 + 8));
  EXPECT_EQ(after_fence, 4 * 5);
  EXPECT_GE(ended_v1, 1) << "no crash left the slot incomplete";
}

TEST_F(DoubleWriteTest, WritesFromSeveralThreadsAtOnce) {
  constexpr std::size_t kPage = 4096;
  constexpr int kThreads = 4;
  constexpr int kPagesPerThread = 200;
  constexpr PageId kPages = kThreads * kPagesPerThread;
  auto [file, p, dw] = rig(kPage, kPages + 1);
  const std::uint64_t slots = dw->stats().slots;
  ASSERT_LT(slots, kPages) << "the ring must be reused during the test";
  const std::uint64_t syncs_before = file->syncs();

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPagesPerThread; ++i) {
        const PageId id = 1 + static_cast<PageId>(t) * kPagesPerThread + i;
        const AlignedBuffer page = dw_page(kPage, id, 100 + id);
        dw->write(id, page.data());
      }
    });
  }
  for (std::thread& t : threads) t.join();

  const DoubleWriteStats s = dw->stats();
  EXPECT_EQ(s.writes, kPages);
  // The ring fills once: one fdatasync (the protocol syncs only when every slot has been used).
  EXPECT_EQ(s.syncs, (kPages - 1) / slots);
  EXPECT_EQ(file->syncs() - syncs_before, s.syncs);
  for (PageId id = 1; id <= kPages; ++id) {
    EXPECT_TRUE(file_page_is(*file, id, dw_page(kPage, id, 100 + id)));
  }
  EXPECT_EQ(dw->repair(), 0u);
}

}  // namespace
}  // namespace pmcached::buffer

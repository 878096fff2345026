// The tree's changes through the redo log: every change a write makes to a page goes through
// PageChanges into its MiniTransaction, so replaying the log over a page file that missed the
// last changes (a crash: the pool dropped without writing back) gives the tree back exactly.
// Over both page tables: a logged page image must never hold a swizzled reference.
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "engine/bptree/btree.h"
#include "engine/buffer/aligned_buffer.h"
#include "engine/buffer/double_write.h"
#include "engine/buffer/page_checksum.h"
#include "engine/buffer/page_file.h"
#include "engine/buffer/redo_log.h"
#include "engine/pm/allocator.h"
#include "engine/pm/pm_region.h"
#include "engine/pm/pool.h"
#include "tests/bptree/btree_harness.h"

namespace pmcached::engine::bptree {
namespace {

using buffer::PageTableKind;
using testing::bytes_of;

// Parameters: the page table, and the pool's frames: few (evictions write many pages back
// between checkpoints, so replay meets pages of every age) or enough for every page (the file
// holds only the checkpoint, so replay rebuilds every later change from the log alone).
class BTreeReplayTest : public ::testing::TestWithParam<std::tuple<PageTableKind, std::size_t>> {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/bptree_replay.XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    pool_ = pm::Pool::open_region(pm::PmRegion::in_memory(16u << 20), "bptree-replay-test");
    allocator_ = std::make_unique<pm::Allocator>(*pool_);
    open_file();
    double_write_ = buffer::DoubleWriteBuffer::create(*pool_, *allocator_, *file_);
    log_ = buffer::RedoLog::create(*pool_, *allocator_, 8u << 20, file_->file_id(),
                                   double_write_->root_offset());
    open_buffers();
  }
  void TearDown() override {
    tree_.reset();
    buffers_.reset();
    log_.reset();
    double_write_.reset();
    file_.reset();
    std::filesystem::remove_all(dir_);
  }

  void open_file() {
    buffer::PageFileOptions file_options;
    file_options.path = (dir_ / "pages").string();
    file_options.page_size = kReplayPageSize;
    file_options.direct_io = false;
    file_ = buffer::PageFile::open(file_options);
  }

  // As the engine does: pages reach the file through the double-write buffer.
  void open_buffers() {
    buffer::BufferOptions options;
    options.frames = std::get<1>(GetParam());
    options.page_table = std::get<0>(GetParam());
    options.child_slots = for_each_child_slot;
    // During replay the units are durable already (and commit() would refuse an LSN past the
    // end the log has not reached again yet).
    options.flush_log_to = [this](buffer::Lsn lsn) {
      if (!replaying_) log_->commit(lsn);
    };
    options.write_page = [this](buffer::PageId id, const std::byte* page) {
      double_write_->write(id, page);
      last_written_ = id;
    };
    buffers_ = std::make_unique<buffer::BufferManager>(*file_, options);
    tree_ = std::make_unique<BTree>(*buffers_);
  }

  // One command: the change, its unit in the log, the commit.
  template <typename Change>
  void command(Change&& change) {
    buffer::MiniTransaction txn(*buffers_, log_.get());
    change(txn);
    const buffer::Lsn lsn = txn.finish();
    ASSERT_FALSE(log_->wants_checkpoint(0.9));
    if (lsn != 0) log_->commit(lsn);
  }

  // The crash: the pool's frames are lost, the page file keeps what was written back (the WAL
  // rule held for each), the log keeps what was committed. Then recovery.
  // `damage` runs on the page file between the crash and recovery; `repair`: recovery repairs
  // torn pages from the double-write buffer first, as the engine's does.
  void crash_and_recover(const std::function<void()>& damage = {}, bool repair = true) {
    const std::uint64_t root = log_->root_offset();
    tree_.reset();
    buffers_.reset();  // nothing written back
    log_.reset();
    double_write_.reset();
    file_.reset();
    open_file();
    if (damage) damage();
    log_ = buffer::RedoLog::open(*pool_, root, file_->file_id());
    double_write_ = buffer::DoubleWriteBuffer::open(*pool_, log_->double_write_root(), *file_);
    if (repair) repaired_ = double_write_->repair();
    open_buffers();
    replaying_ = true;
    (void)log_->replay([this](buffer::Lsn end, std::span<const buffer::LogRecord> records) {
      buffer::MiniTransaction::replay(*buffers_, end, records);
    });
    replaying_ = false;
    tree_->load();
  }

  void run_workload(std::map<std::string, std::string>& model);

  std::map<std::string, std::string> contents() {
    std::map<std::string, std::string> seen;
    tree_->scan("", SIZE_MAX, [&](std::string_view key, std::span<const std::byte> record) {
      seen.emplace(key, std::string(reinterpret_cast<const char*>(record.data()), record.size()));
      return true;
    });
    return seen;
  }

  static constexpr std::size_t kReplayPageSize = 4096;
  bool replaying_ = false;
  buffer::PageId last_written_ = buffer::kNoPage;
  std::size_t repaired_ = 0;
  std::filesystem::path dir_;
  std::unique_ptr<pm::Pool> pool_;
  std::unique_ptr<pm::Allocator> allocator_;
  std::unique_ptr<buffer::PageFile> file_;
  std::unique_ptr<buffer::DoubleWriteBuffer> double_write_;
  std::unique_ptr<buffer::RedoLog> log_;
  std::unique_ptr<buffer::BufferManager> buffers_;
  std::unique_ptr<BTree> tree_;
};

// Formats the tree and runs 2,500 random upserts, erases and patches with a checkpoint halfway
// (replay starts there); the model is what the tree must hold.
void BTreeReplayTest::run_workload(std::map<std::string, std::string>& model) {
  command([&](buffer::MiniTransaction& txn) { tree_->format(txn); });
  std::mt19937 rng(static_cast<unsigned>(std::get<1>(GetParam())) +
                   (std::get<0>(GetParam()) == PageTableKind::kHash ? 31 : 32));
  for (int op = 0; op < 2500; ++op) {
    if (op == 1200) {  // a checkpoint halfway: replay starts from here
      buffers_->write_back_all();
      log_->checkpoint(log_->end_lsn());
    }
    std::string key("key");
    key += std::to_string(rng() % 900);
    const unsigned what = rng() % 10;
    if (what < 6) {
      std::string value(rng() % 20 == 0 ? 2000 + rng() % 5000 : rng() % 300,
                        static_cast<char>('a' + op % 26));
      command(
          [&](buffer::MiniTransaction& txn) { (void)tree_->upsert(txn, key, bytes_of(value)); });
      model[key] = value;
    } else if (what < 9) {
      command([&](buffer::MiniTransaction& txn) { (void)tree_->erase(txn, key); });
      model.erase(key);
    } else if (auto it = model.find(key); it != model.end() && it->second.size() >= 4) {
      command(
          [&](buffer::MiniTransaction& txn) { (void)tree_->patch(txn, key, 1, bytes_of("PAT")); });
      it->second.replace(1, 3, "PAT");
    }
  }
  ASSERT_EQ(tree_->check(), "");
  ASSERT_TRUE(contents() == model);  // (not EXPECT_EQ: a failure would print every record)
  if (std::get<1>(GetParam()) < 100) {
    EXPECT_GT(buffers_->stats().evictions, 0u);  // some pages reached the file, some did not
  } else {
    EXPECT_EQ(buffers_->stats().evictions, 0u);  // the file holds the checkpoint only
  }
}

TEST_P(BTreeReplayTest, ReplayingTheLogOverAStalePageFileGivesTheTreeBack) {
  std::map<std::string, std::string> model;
  ASSERT_NO_FATAL_FAILURE(run_workload(model));

  crash_and_recover();
  ASSERT_EQ(tree_->check(), "");  // (a broken tree is not scanned: it may hold a cycle)
  EXPECT_EQ(tree_->size(), model.size());
  EXPECT_TRUE(contents() == model);
  // And the recovered tree takes writes again.
  command([&](buffer::MiniTransaction& txn) {
    EXPECT_EQ(tree_->upsert(txn, "after", bytes_of("recovery")), WriteStatus::kInserted);
  });
  EXPECT_EQ(tree_->check(), "");
}

// The log holds only the bytes a command changed, so replay needs every page in the file
// intact. A crash during a write-back can tear the page being written: recovery must put it
// back from the double-write buffer before replaying.
TEST_P(BTreeReplayTest, APageTornByTheCrashIsRepairedBeforeReplay) {
  std::map<std::string, std::string> model;
  ASSERT_NO_FATAL_FAILURE(run_workload(model));
  const buffer::PageId torn = last_written_;  // the write the crash interrupted
  ASSERT_NE(torn, buffer::kNoPage);
  buffer::AlignedBuffer written(kReplayPageSize);
  buffer::AlignedBuffer page(kReplayPageSize);

  crash_and_recover([&] {
    file_->read(torn, written.data());
    std::memcpy(page.data(), written.data(), kReplayPageSize);
    std::memset(page.data() + kReplayPageSize / 2, 0xA5, kReplayPageSize / 2);
    file_->write(torn, page.data());  // the first half of a write that never finished
    const auto& header = *reinterpret_cast<const buffer::PageHeader*>(page.data());
    ASSERT_NE(header.checksum, buffer::page_checksum(page.data(), kReplayPageSize));
  });
  EXPECT_EQ(repaired_, 1u);
  ASSERT_EQ(tree_->check(), "");
  EXPECT_EQ(tree_->size(), model.size());
  EXPECT_TRUE(contents() == model);
  // The page the file holds now is the one that was being written.
  buffers_->write_back_all();
  file_->read(torn, page.data());
  const auto& header = *reinterpret_cast<const buffer::PageHeader*>(page.data());
  EXPECT_EQ(header.checksum, buffer::page_checksum(page.data(), kReplayPageSize));
  EXPECT_GE(header.lsn, reinterpret_cast<const buffer::PageHeader*>(written.data())->lsn);
}

// Without the repair the same crash is not survivable: the torn page is refused when read (the
// check above would find a torn page, not a lucky one).
TEST_P(BTreeReplayTest, WithoutTheRepairTheTornPageIsRefused) {
  std::map<std::string, std::string> model;
  ASSERT_NO_FATAL_FAILURE(run_workload(model));
  const buffer::PageId torn = last_written_;
  buffer::AlignedBuffer page(kReplayPageSize);
  EXPECT_THROW(
      {
        crash_and_recover(
            [&] {
              file_->read(torn, page.data());
              std::memset(page.data() + kReplayPageSize / 2, 0xA5, kReplayPageSize / 2);
              file_->write(torn, page.data());
            },
            /*repair=*/false);
        for (buffer::PageId id = 2; id < file_->page_count(); ++id) {
          (void)buffers_->fix(id, buffer::LatchMode::kShared);
        }
      },
      buffer::PageFileError);
  replaying_ = false;
}

// A page logged whole costs the log only its blocks that hold a non-zero byte, and replay gives
// it back byte for byte, zeros included, whatever the file held at its place before.
TEST_P(BTreeReplayTest, APageLoggedWholeLeavesOutItsZeroBlocksAndReplaysExactly) {
  command([&](buffer::MiniTransaction& txn) { tree_->format(txn); });
  const buffer::PageId id = 100;  // beyond the tree's pages: the tree never reads it
  buffer::AlignedBuffer garbage(kReplayPageSize);
  std::memset(garbage.data(), 0xA5, kReplayPageSize);
  file_->write(id, garbage.data());

  buffer::AlignedBuffer expected(kReplayPageSize);
  std::memset(expected.data(), 0, kReplayPageSize);
  const auto write = [&](buffer::PageChanges& page, std::size_t offset, std::size_t n) {
    std::vector<std::byte> bytes(n);
    for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::byte>(1 + (offset + i) % 250);
    page.write(offset, bytes.data(), n);
    std::memcpy(expected.data() + offset, bytes.data(), n);
  };
  const std::uint64_t before = log_->stats().bytes_appended;
  command([&](buffer::MiniTransaction& txn) {
    buffer::PageChanges& page = txn.track_new(buffers_->fix_new(id));
    write(page, buffer::kPageHeaderSize, 100);  // a header and slots
    write(page, 1000, 1);                       // a lone byte
    write(page, kReplayPageSize - 300, 300);    // records at the end
    page.fill(2000, std::byte{0}, 64);          // zeros written are zeros left out
  });
  // Three runs of 64-byte blocks: 16..128 (the header's end to its block's), 960..1024 and
  // 3776..4096, 496 bytes, with 8 bytes of offset and length each, the page id and the count, in
  // a unit with its own headers: not the 4,080 bytes of the whole page.
  const std::uint64_t logged = log_->stats().bytes_appended - before;
  EXPECT_GE(logged, 112u + 64 + 320 + 3 * 8 + 12);
  EXPECT_LT(logged, 112u + 64 + 320 + 3 * 8 + 12 + 64);

  crash_and_recover();
  buffer::PageGuard page = buffers_->fix(id, buffer::LatchMode::kShared);
  EXPECT_EQ(
      std::memcmp(page.data() + buffer::kPageHeaderSize, expected.data() + buffer::kPageHeaderSize,
                  kReplayPageSize - buffer::kPageHeaderSize),
      0);
}

// A record whose unit checksum holds but whose block lies past the page (a 32-bit offset + length
// that wraps around) is refused, never written out of bounds: for both record types that carry
// byte runs.
TEST_P(BTreeReplayTest, APageRecordReachingPastThePageIsRefused) {
  for (const std::uint16_t type : {buffer::kPageSparseImage, buffer::kPageRanges}) {
    SCOPED_TRACE(type);
    TearDown();
    SetUp();
    command([&](buffer::MiniTransaction& txn) { tree_->format(txn); });
    buffers_->write_back_all();  // the meta page is in the file for kPageRanges to fix
    std::vector<std::byte> body;
    const auto put = [&](auto value) {
      const auto* bytes = reinterpret_cast<const std::byte*>(&value);
      body.insert(body.end(), bytes, bytes + sizeof value);
    };
    put(buffer::PageId{1});
    if (type == buffer::kPageRanges) put(std::uint32_t{0});  // no moves
    put(std::uint32_t{1});                                   // one block or range
    put(std::uint32_t{0xFFFFFFF0});                          // + 32 wraps to 16
    put(std::uint32_t{32});
    body.resize(body.size() + 32, std::byte{0x5A});
    const buffer::LogRecord record{type, body};
    log_->commit(log_->append(std::span(&record, 1)));
    try {
      crash_and_recover();
      ADD_FAILURE() << "replay took the record";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("out of bounds"), std::string::npos) << e.what();
    }
    replaying_ = false;
  }
}

INSTANTIATE_TEST_SUITE_P(
    PageTablesAndPools, BTreeReplayTest,
    ::testing::Combine(::testing::Values(PageTableKind::kHash, PageTableKind::kSwizzle),
                       ::testing::Values(std::size_t{16}, std::size_t{1024})),
    [](const ::testing::TestParamInfo<std::tuple<PageTableKind, std::size_t>>& param_info) {
      return std::string(buffer::page_table_name(std::get<0>(param_info.param))) + "_" +
             std::to_string(std::get<1>(param_info.param)) + "frames";
    });

}  // namespace
}  // namespace pmcached::engine::bptree

// A BTree over a real page file in a temp dir and a small buffer pool, for the tree tests:
// one mini-transaction (without a redo log) per call.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "engine/bptree/btree.h"
#include "engine/buffer/buffer_manager.h"
#include "engine/buffer/mini_transaction.h"
#include "engine/buffer/page_file.h"

namespace pmcached::engine::bptree::testing {

inline std::span<const std::byte> bytes_of(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

struct HarnessOptions {
  buffer::PageTableKind page_table = buffer::PageTableKind::kHash;
  std::size_t frames = 16;
  std::size_t page_size = 4096;
  std::uint64_t max_bytes = 64ull << 20;
  unsigned b2_threshold = 0;  // > 0: a B2-tree (pages with embedded trees)
};

// What the parametrised tree tests run on: both page tables, as a plain B+-tree and as a B2-tree
// (pages with embedded trees, engine/b2tree; a small threshold so that pages hold several ranges).
struct TreeKind {
  buffer::PageTableKind page_table;
  unsigned b2_threshold;
};
inline const auto kTreeKinds = ::testing::Values(
    TreeKind{buffer::PageTableKind::kHash, 0}, TreeKind{buffer::PageTableKind::kSwizzle, 0},
    TreeKind{buffer::PageTableKind::kHash, 4}, TreeKind{buffer::PageTableKind::kSwizzle, 4});
inline std::string tree_kind_name(const ::testing::TestParamInfo<TreeKind>& info) {
  return std::string(info.param.b2_threshold == 0 ? "bptree_" : "b2tree_") +
         std::string(buffer::page_table_name(info.param.page_table));
}

class TreeHarness {
 public:
  explicit TreeHarness(HarnessOptions options) : options_(options) {
    char pattern[] = "/tmp/bptree_test.XXXXXX";
    if (mkdtemp(pattern) == nullptr) std::abort();
    dir_ = pattern;
    open();
  }
  ~TreeHarness() {
    tree_.reset();
    buffers_.reset();
    file_.reset();
    std::filesystem::remove_all(dir_);
  }
  TreeHarness(const TreeHarness&) = delete;
  TreeHarness& operator=(const TreeHarness&) = delete;

  BTree& tree() { return *tree_; }
  buffer::BufferManager& buffers() { return *buffers_; }

  // Writes every page back and opens file, pool and tree again.
  void reopen() {
    buffers_->write_back_all();
    tree_.reset();
    buffers_.reset();
    file_.reset();
    open();
  }

  WriteStatus put(std::string_view key, std::string_view value) {
    buffer::MiniTransaction txn(*buffers_, nullptr);
    const WriteStatus status = tree_->upsert(txn, key, bytes_of(value));
    (void)txn.finish();
    return status;
  }
  bool erase(std::string_view key) {
    buffer::MiniTransaction txn(*buffers_, nullptr);
    const bool erased = tree_->erase(txn, key);
    (void)txn.finish();
    return erased;
  }
  bool patch(std::string_view key, std::size_t offset, std::string_view bytes) {
    buffer::MiniTransaction txn(*buffers_, nullptr);
    const bool patched = tree_->patch(txn, key, offset, bytes_of(bytes));
    (void)txn.finish();
    return patched;
  }
  std::optional<std::string> get(std::string_view key) {
    RecordBuffer out;
    if (!tree_->read(key, out)) return std::nullopt;
    return std::string(reinterpret_cast<const char*>(out.data()), out.size());
  }

 private:
  void open() {
    buffer::PageFileOptions file_options;
    file_options.path = (dir_ / "pages").string();
    file_options.page_size = options_.page_size;
    file_options.max_bytes = options_.max_bytes;
    file_options.direct_io = false;
    file_ = buffer::PageFile::open(file_options);
    buffer::BufferOptions buffer_options;
    buffer_options.frames = options_.frames;
    buffer_options.page_table = options_.page_table;
    buffer_options.eviction = buffer::EvictionKind::kClock;
    buffer_options.child_slots = for_each_child_slot;
    buffers_ = std::make_unique<buffer::BufferManager>(*file_, buffer_options);
    tree_ = std::make_unique<BTree>(*buffers_, options_.b2_threshold);
    if (!BTree::formatted(*buffers_)) {
      buffer::MiniTransaction txn(*buffers_, nullptr);
      tree_->format(txn);
      (void)txn.finish();
    }
    tree_->load();
  }

  HarnessOptions options_;
  std::filesystem::path dir_;
  std::unique_ptr<buffer::PageFile> file_;
  std::unique_ptr<buffer::BufferManager> buffers_;
  std::unique_ptr<BTree> tree_;
};

}  // namespace pmcached::engine::bptree::testing

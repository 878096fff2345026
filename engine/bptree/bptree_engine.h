// BpTreeEngine: the class behind make_bptree_engine() (private to engine/bptree). The design and
// the durability rules are in bptree_factory.h; the tree itself in btree.h.
#pragma once

#include <atomic>
#include <memory>
#include <shared_mutex>
#include <string>

#include "engine/bptree/btree.h"
#include "engine/buffer/buffer_manager.h"
#include "engine/buffer/double_write.h"
#include "engine/buffer/page_file.h"
#include "engine/buffer/redo_log.h"
#include "engine/record_engine.h"

namespace pmcached::engine::bptree {

class BpTreeEngine final : public RecordEngine {
 public:
  // `b2_threshold` > 0: the b2tree engine (pages with embedded trees, engine/b2tree); else bptree.
  explicit BpTreeEngine(const RecordEngineContext& context, unsigned b2_threshold = 0);
  ~BpTreeEngine() override;

  std::string_view name() const noexcept override;
  EngineCapabilities capabilities() const noexcept override;
  bool read(std::string_view key, RecordBuffer& out) const override;
  bool read_head(std::string_view key, std::size_t n, RecordBuffer& out) const override;
  WriteStatus write(std::string_view key, std::span<const std::byte> record) override;
  bool erase(std::string_view key) override;
  bool patch(std::string_view key, std::size_t offset, std::span<const std::byte> bytes,
             bool durable) override;
  void scan(std::string_view from, std::size_t prefix,
            const std::function<bool(std::string_view, std::span<const std::byte>)>& visit)
      const override;
  std::size_t size() const noexcept override;
  std::vector<EngineStat> stats() const override;
  void for_each_block(const std::function<void(std::uint64_t offset)>& visit) const override;
  void recover() override;
  void close() override;

 private:
  // Runs `change` (a tree call into a MiniTransaction) as one command: checkpoints first when the
  // log is half full, then logs the transaction and commits it (durable on return) unless
  // `durable` is false.
  template <typename Change>
  auto run(Change&& change, bool durable = true);
  // Writes every dirty page, fsyncs the file and moves the log's start past them. Holds writers
  // back while it runs. Unless `forced`, only if the log still wants it.
  void checkpoint(bool forced);

  pm::Pool& pool_;
  std::unique_ptr<buffer::PageFile> file_;
  std::unique_ptr<buffer::DoubleWriteBuffer> double_write_;  // before buffers_: they write to it
  std::unique_ptr<buffer::RedoLog> log_;
  std::unique_ptr<buffer::BufferManager> buffers_;
  std::unique_ptr<BTree> tree_;
  PagedOptions options_;
  const unsigned b2_threshold_;
  // Writers hold it shared for a whole command; a checkpoint holds it exclusively.
  mutable std::shared_mutex checkpoint_gate_;
  std::atomic<std::uint64_t> checkpoints_{0};
  std::atomic<bool> replaying_{false};  // recover() is replaying the log
  std::size_t replayed_units_ = 0;
};

}  // namespace pmcached::engine::bptree

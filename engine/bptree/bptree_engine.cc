// BpTreeEngine: the RecordEngine over BTree, the buffer manager, the page file and the redo log.
#include "engine/bptree/bptree_engine.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>

#include "engine/b2tree/b2tree_factory.h"
#include "engine/bptree/bptree_factory.h"
#include "engine/bptree/node.h"
#include "engine/buffer/double_write.h"
#include "engine/buffer/mini_transaction.h"
#include "engine/pm/pool.h"

namespace pmcached::engine {

std::unique_ptr<RecordEngine> make_bptree_engine(const RecordEngineContext& context) {
  return std::make_unique<bptree::BpTreeEngine>(context);
}

namespace bptree {
namespace {

// Enough frames for the deepest write: its path, a split at every level, and the overflow chain
// of the largest record (memcached's -I tops out at 1 MiB by default).
std::size_t frames_for(const PagedOptions& options) {
  const std::size_t minimum = 3 * ((std::size_t{1} << 20) / options.page_size) + 64;
  return std::max(options.buffer_pool_bytes / options.page_size, minimum);
}

}  // namespace

BpTreeEngine::BpTreeEngine(const RecordEngineContext& context, unsigned b2_threshold)
    : pool_(*context.pool), options_(context.paged), b2_threshold_(b2_threshold) {
  if (context.pool == nullptr || context.allocator == nullptr) {
    throw std::runtime_error("bptree needs a pool for its redo log");
  }
  const std::string& path = options_.page_file;
  const bool new_pool = pool_.root() == 0;
  std::error_code ec;
  if (!new_pool && !std::filesystem::exists(path, ec)) {
    throw std::runtime_error("page file " + path +
                             " does not exist, but the pool holds a bptree log written for one");
  }
  buffer::PageFileOptions file_options;
  file_options.path = path;
  file_options.page_size = options_.page_size;
  file_options.max_bytes = options_.page_file_bytes;
  file_options.direct_io = options_.direct_io;
  file_ = buffer::PageFile::open(file_options);
  if (new_pool && file_->page_count() > 1) {
    throw std::runtime_error("page file " + path + " holds " +
                             std::to_string(file_->page_count() - 1) +
                             " pages but the pool is new: it belongs to another pool (remove it, "
                             "or give another --page-file)");
  }
  if (new_pool) {
    double_write_ = buffer::DoubleWriteBuffer::create(pool_, *context.allocator, *file_);
    log_ = buffer::RedoLog::create(pool_, *context.allocator, options_.log_bytes, file_->file_id(),
                                   double_write_->root_offset());
    pool_.set_root(log_->root_offset());
  } else {
    try {
      log_ = buffer::RedoLog::open(pool_, pool_.root(), file_->file_id());
    } catch (const buffer::RedoLogError& error) {
      // Name the file the user gave: the log itself knows only ids.
      throw std::runtime_error("page file " + path + " cannot be used with this pool (" +
                               error.what() + ")");
    }
    double_write_ = buffer::DoubleWriteBuffer::open(pool_, log_->double_write_root(), *file_);
  }

  buffer::BufferOptions buffer_options;
  buffer_options.frames = frames_for(options_);
  buffer_options.page_table = options_.page_table;
  buffer_options.eviction = options_.eviction;
  buffer_options.child_slots = &for_each_child_slot;
  buffer_options.flush_log_to = [this](buffer::Lsn lsn) {
    // Replayed units are durable already (replay only visits durable ones).
    if (!replaying_.load(std::memory_order_acquire)) log_->commit(lsn);
  };
  buffer_options.write_page = [this](buffer::PageId id, const std::byte* page) {
    double_write_->write(id, page);
  };
  buffers_ = std::make_unique<buffer::BufferManager>(*file_, std::move(buffer_options));
  tree_ = std::make_unique<BTree>(*buffers_, b2_threshold_);
}

BpTreeEngine::~BpTreeEngine() = default;

std::string_view BpTreeEngine::name() const noexcept {
  return b2_threshold_ > 0 ? kB2TreeEngineName : kBpTreeEngineName;
}

EngineCapabilities BpTreeEngine::capabilities() const noexcept {
  return {.ordered = true, .concurrent = true, .persistent = true};
}

template <typename Change>
auto BpTreeEngine::run(Change&& change, bool durable) {
  if (log_->wants_checkpoint()) checkpoint(/*forced=*/false);
  buffer::Lsn lsn = 0;
  std::shared_lock gate(checkpoint_gate_);
  buffer::MiniTransaction txn(*buffers_, log_.get());
  auto result = [&] {
    try {
      return change(txn);
    } catch (const std::exception& error) {
      // An I/O error or a full buffer pool in the middle of a write: pages it changed cannot be
      // logged consistently, and an unlogged change must never reach the page file.
      if (txn.pending()) {
        std::fprintf(stderr, "bptree: a write failed half-way (%s); stopping\n", error.what());
        std::abort();
      }
      throw;
    }
  }();
  lsn = txn.finish();
  if (txn.pending()) {
    // The log had no room although a checkpoint runs when it is half full: the unit is larger
    // than everything the log could hold. Its pages are changed but cannot be logged, and an
    // unlogged change must never reach the page file: stop here, recovery restores the last
    // durable state.
    std::fprintf(stderr, "bptree: a command's redo unit does not fit in the log (--log-mb)\n");
    std::abort();
  }
  gate.unlock();
  if (durable && lsn != 0) log_->commit(lsn);
  return result;
}

bool BpTreeEngine::read(std::string_view key, RecordBuffer& out) const {
  return tree_->read(key, out);
}

bool BpTreeEngine::read_head(std::string_view key, std::size_t n, RecordBuffer& out) const {
  return tree_->read(key, out, n);
}

WriteStatus BpTreeEngine::write(std::string_view key, std::span<const std::byte> record) {
  return run([&](buffer::MiniTransaction& txn) { return tree_->upsert(txn, key, record); });
}

bool BpTreeEngine::erase(std::string_view key) {
  return run([&](buffer::MiniTransaction& txn) { return tree_->erase(txn, key); });
}

bool BpTreeEngine::patch(std::string_view key, std::size_t offset, std::span<const std::byte> bytes,
                         bool durable) {
  // A hint is logged like any change (the page it dirties must be repairable after a torn write)
  // but not waited for: the next commit or checkpoint makes it durable.
  return run([&](buffer::MiniTransaction& txn) { return tree_->patch(txn, key, offset, bytes); },
             durable);
}

void BpTreeEngine::scan(
    std::string_view from, std::size_t prefix,
    const std::function<bool(std::string_view, std::span<const std::byte>)>& visit) const {
  tree_->scan(from, prefix, visit);
}

std::size_t BpTreeEngine::size() const noexcept { return tree_->size(); }

void BpTreeEngine::for_each_block(const std::function<void(std::uint64_t offset)>& visit) const {
  log_->for_each_block(visit);
  double_write_->for_each_block(visit);
}

void BpTreeEngine::recover() {
  // Pages a crash tore in the middle of their write-back first: replay reads them.
  (void)double_write_->repair();
  replaying_.store(true, std::memory_order_release);
  const std::size_t units =
      log_->replay([&](buffer::Lsn end_lsn, std::span<const buffer::LogRecord> records) {
        buffer::MiniTransaction::replay(*buffers_, end_lsn, records);
      });
  replaying_.store(false, std::memory_order_release);
  replayed_units_ = units;
  if (!BTree::formatted(*buffers_)) {
    buffer::MiniTransaction txn(*buffers_, log_.get());
    tree_->format(txn);
    log_->commit(txn.finish());
  }
  tree_->load();
  // The replayed pages reach the file and the log starts empty: the next start replays only
  // what changes from now on.
  checkpoint(/*forced=*/true);
}

void BpTreeEngine::close() { checkpoint(/*forced=*/true); }

void BpTreeEngine::checkpoint(bool forced) {
  std::unique_lock gate(checkpoint_gate_);
  if (!forced && !log_->wants_checkpoint()) return;  // another writer did it meanwhile
  const buffer::Lsn lsn = log_->end_lsn();
  log_->commit(lsn);
  buffers_->write_back_all();
  log_->checkpoint(lsn);
  checkpoints_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<EngineStat> BpTreeEngine::stats() const {
  std::vector<EngineStat> out;
  const auto add = [&out](std::string name, auto value) {
    if constexpr (std::is_convertible_v<decltype(value), std::string_view>) {
      out.push_back({std::move(name), std::string(value)});
    } else {
      out.push_back({std::move(name), std::to_string(value)});
    }
  };
  const buffer::BufferStats b = buffers_->stats();
  add("page_size", buffers_->page_size());
  add("page_table", buffer::page_table_name(buffers_->page_table()));
  add("eviction", buffer::eviction_name(buffers_->eviction()));
  add("buffer_frames", buffers_->frame_count());
  add("buffer_fixes", b.fixes);
  add("buffer_hits", b.hits);
  add("buffer_misses", b.misses);
  add("buffer_evictions", b.evictions);
  add("buffer_write_backs", b.write_backs);
  add("buffer_swizzles", b.swizzles);
  add("buffer_unswizzles", b.unswizzles);
  add("buffer_swizzled_fixes", b.swizzled_fixes);
  add("buffer_hash_probes", b.hash_probes);
  add("buffer_fix_retries", b.fix_retries);
  add("buffer_frames_examined", b.frames_examined);
  add("buffer_dirty_frames", b.dirty_frames);
  add("buffer_resident_pages", b.resident_pages);
  for (const auto& [name, value] : buffers_->policy_state()) add("policy_" + name, value);
  const buffer::RedoLogStats l = log_->stats();
  add("log_capacity", l.capacity);
  add("log_used_bytes", l.used_bytes);
  add("log_bytes_appended", l.bytes_appended);
  add("log_units", l.units);
  add("log_commits", l.commits);
  add("log_group_flushes", l.group_flushes);
  add("checkpoints", checkpoints_.load(std::memory_order_relaxed));
  add("log_units_replayed", replayed_units_);
  const buffer::DoubleWriteStats d = double_write_->stats();
  add("double_write_slots", d.slots);
  add("double_write_writes", d.writes);
  add("double_write_syncs", d.syncs);
  add("pages_repaired", d.pages_repaired);
  add("page_file", std::string_view(file_->path()));
  add("page_file_direct_io", std::string_view(file_->direct_io() ? "yes" : "no"));
  add("page_file_pages", file_->page_count());
  add("page_file_max_pages", file_->max_pages());
  add("page_file_reads", file_->reads());
  add("page_file_writes", file_->writes());
  add("page_file_syncs", file_->syncs());
  const MetaFields meta = tree_->meta();
  add("pages_in_use",
      meta.high_water > meta.free_pages() ? meta.high_water - meta.free_pages() : 0);
  add("pages_free", meta.free_pages());
  const BTreeStats t = tree_->stats();
  add("tree_height", t.height);
  add("tree_splits", t.splits);
  add("tree_edge_splits", t.edge_splits);
  add("tree_merges", t.merges);
  add("tree_borrows", t.borrows);
  add("tree_pessimistic_writes", t.pessimistic_writes);
  add("tree_latched_reads", t.latched_reads);
  add("overflow_records_written", t.overflow_records_written);
  if (b2_threshold_ > 0) {
    const TreeRebuilds r = tree_rebuilds();
    add("b2_threshold", b2_threshold_);
    add("b2_tree_builds", r.count);
    add("b2_tree_build_ns", r.nanoseconds);
    add("b2_tree_bytes_mean", r.count == 0 ? 0 : r.bytes / r.count);  // over the builds
    add("b2_tree_bytes_max", r.max_bytes);
    add("b2_ranges_mean", r.count == 0 ? 0 : r.ranges / r.count);
    // Per page, now: a walk of the whole tree, so only while it is resident (it reads no file).
    if (meta.high_water <= buffers_->frame_count()) {
      const BTree::TreeShapes s = tree_->tree_shapes();
      add("b2_page_tree_bytes_mean", s.pages == 0 ? 0 : s.bytes / s.pages);
      add("b2_page_tree_bytes_max", s.max_bytes);
      add("b2_page_ranges_mean", s.pages == 0 ? 0 : s.ranges / s.pages);
    }
  }
  add("items", tree_->size());
  return out;
}

}  // namespace bptree
}  // namespace pmcached::engine

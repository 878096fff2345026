// RecordEngine: the interface of an engine that owns its records (the paged engines: bptree,
// b2tree, lsm), beside IndexEngine (which maps keys to records the store keeps in its item heap).
//
// A record is the store's item record (engine/store/item.h: header, key, value) as opaque bytes;
// the engine keeps it whole under its key, in its pages, and hands copies back. The store keeps
// every item rule (cas, expiry, flush_all, append, incr, touch, meta flags) and calls only this
// interface, so a record engine never interprets a record except through `patch` offsets the
// store gives it. The seam is described in docs/ADDING_AN_ENGINE.md.
//
// Thread safety: as IndexEngine: concurrent calls on different keys are safe and each call is
// atomic; the store serialises calls on one key.
// Durability: when write(), erase() or a durable patch() returns, the change is durable (the
// engine's redo log is flushed and fenced); a crash leaves the old or the new record, never a torn
// one. A non-durable patch() is a hint (access bits, last access time): it may be lost in a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/buffer/buffer_types.h"
#include "engine/index_engine.h"

namespace pmcached::pm {
class Pool;
class Allocator;
}  // namespace pmcached::pm

namespace pmcached::engine {

// A record copied out of an engine: 8-byte aligned, reused across reads.
class RecordBuffer {
 public:
  // Makes room for `size` bytes (contents unspecified) and returns where to write them. The
  // words are never given back: a thread that reads a long record, then a short one, then the
  // long one again does not zero-fill the long one's room twice.
  std::byte* resize(std::size_t size) {
    const std::size_t words = (size + 7) / 8;
    if (words > words_.size()) words_.resize(words);
    size_ = size;
    return data();
  }
  [[nodiscard]] std::byte* data() noexcept { return reinterpret_cast<std::byte*>(words_.data()); }
  [[nodiscard]] const std::byte* data() const noexcept {
    return reinterpret_cast<const std::byte*>(words_.data());
  }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return {data(), size_}; }

 private:
  std::vector<std::uint64_t> words_;
  std::size_t size_ = 0;
};

enum class WriteStatus : std::uint8_t {
  kInserted,
  kReplaced,
  kFull,  // no room on the page file (--page-file-mb) or in the log; nothing changed
};

class RecordEngine {
 public:
  virtual ~RecordEngine() = default;

  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  [[nodiscard]] virtual EngineCapabilities capabilities() const noexcept = 0;

  // Copies the record of `key` into `out`; false if the key is absent.
  [[nodiscard]] virtual bool read(std::string_view key, RecordBuffer& out) const = 0;
  // Copies the first min(`n`, record size) bytes of the record of `key` into `out` (the store's
  // header, without reading the rest of a long record); false if the key is absent.
  [[nodiscard]] virtual bool read_head(std::string_view key, std::size_t n,
                                       RecordBuffer& out) const = 0;

  // Stores `record` under `key`, inserting or replacing, durably.
  [[nodiscard]] virtual WriteStatus write(std::string_view key,
                                          std::span<const std::byte> record) = 0;

  // Removes `key` durably; false if it was absent.
  virtual bool erase(std::string_view key) = 0;

  // Overwrites bytes [offset, offset + bytes.size()) of the record of `key` (a fixed field of the
  // store's header: expiry on touch, access bits); durably if `durable`. False if absent.
  virtual bool patch(std::string_view key, std::size_t offset, std::span<const std::byte> bytes,
                     bool durable) = 0;

  // Visits keys >= `from` in key order until `visit` returns false, with the first
  // min(`prefix`, record size) bytes of each record. Views are valid only during the call.
  virtual void scan(std::string_view from, std::size_t prefix,
                    const std::function<bool(std::string_view key,
                                             std::span<const std::byte> head)>& visit) const = 0;

  [[nodiscard]] virtual std::size_t size() const noexcept = 0;
  [[nodiscard]] virtual std::vector<EngineStat> stats() const = 0;

  // The pool blocks the engine owns (its redo log), for the allocator's start-up rebuild.
  virtual void for_each_block(const std::function<void(std::uint64_t offset)>& visit) const = 0;
  // Once at start-up, after the allocator's rebuild and before any other call: replays the redo
  // log over the last checkpoint. Throws std::runtime_error if the page file or log is corrupt.
  virtual void recover() = 0;
  // Clean shutdown: a checkpoint (dirty pages written and fsynced, the log emptied).
  virtual void close() = 0;
};

// What a paged engine is built with (--page-file, --page-size, --buffer-pool-mb, ...).
struct PagedOptions {
  std::string page_file;  // empty: next to the pool, "<pool>.pages"
  std::size_t page_size = buffer::kDefaultPageSize;
  std::size_t buffer_pool_bytes = 64u << 20;
  std::uint64_t page_file_bytes = 1ull << 30;
  buffer::PageTableKind page_table = buffer::PageTableKind::kHash;
  buffer::EvictionKind eviction = buffer::EvictionKind::kClock;
  std::size_t log_bytes = 64u << 20;  // the redo log's region in the pool
  bool direct_io = true;
  // b2tree: at most this many slots per range of a page's embedded tree (seed 004 §3.5). Other
  // paged engines ignore it.
  unsigned b2_threshold = 32;
};

// What a record engine is given when it is created. The pool's root field holds the engine's
// root (its redo log's root block); both outlive the engine.
struct RecordEngineContext {
  pm::Pool* pool = nullptr;
  pm::Allocator* allocator = nullptr;
  PagedOptions paged;
};

using RecordEngineFactory =
    std::function<std::unique_ptr<RecordEngine>(const RecordEngineContext&)>;

}  // namespace pmcached::engine

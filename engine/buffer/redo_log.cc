// RedoLog: creating and opening the log, append, group commit, checkpoint and replay.
//
// Persistence protocol (one fence per group commit):
//   append      writes the unit (and a padding unit before it) with ordinary stores; nothing is
//               flushed, so a unit may reach PM early, partly or whole, through cache evictions.
//   commit      flushes the lines of [durable, written) — every unit written contiguously so far
//               — and fences once; the durable LSN moves only after the fence. Units therefore
//               become durable in LSN order, and replay, which stops at the first invalid unit,
//               never passes a unit that was acknowledged.
//   checkpoint  one failure-atomic 8-byte store of the checkpoint LSN, persisted BEFORE the space
//               before it is handed to appends: until the new LSN is durable, replay may still
//               start at the old one, so those units must stay intact.
//   replay      visits the valid prefix from the checkpoint LSN, then writes and persists a lap
//               skip where it ended (below) before any new unit can be appended.
//
// Why a lap skip after replay (the LSN check alone is not enough): after a crash the region may
// hold, beyond the valid prefix ending at x, a unit Y that reached PM whole although a unit
// before it did not (an early eviction): never acknowledged, and not replayed this time. Y's LSN
// y < x + size: appends never use more than the region's bytes from the checkpoint on, and x is
// at least the checkpoint plus the laps skipped before it. As position = LSN % size, a chain
// continued at x would expect exactly the LSN y at Y's position; a crash after the new units
// before that position became durable, but before a new unit overwrote Y, would make the next
// replay accept the stale Y (tests/buffer/redo_log_test.cc builds this case). Continuing one lap
// later (LSN x + 16 + size, right after the 16-byte lap skip) makes every LSN the new chain
// expects larger than any LSN left in the region, so every stale byte fails the LSN check from
// then on (expected LSNs only grow). The skip costs no space: the tail does not count the lap it
// jumps. Bytes of another log (a reused block) fail the checksum, which is seeded per log.

#include "engine/buffer/redo_log.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>

#include "engine/buffer/pool_blocks.h"
#include "engine/buffer/redo_log_format.h"
#include "engine/buffer/redo_log_tail.h"
#include "engine/pm/allocator.h"
#include "engine/pm/persistence.h"
#include "engine/pm/pool.h"

namespace pmcached::buffer {
namespace {

using redo::RootBlock;

std::uint64_t round_up(std::uint64_t n, std::uint64_t to) { return (n + to - 1) / to * to; }

std::uint32_t new_seed() {
  std::random_device device;
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  return device() ^ static_cast<std::uint32_t>(now) ^ static_cast<std::uint32_t>(now >> 32);
}

[[noreturn]] void refuse(std::uint64_t root_offset, const std::string& why) {
  throw RedoLogError("redo log at pool offset " + std::to_string(root_offset) + ": " + why);
}

// The root block at `root_offset`, checked against the pool and `page_file_id`.
RootBlock read_root(pm::Pool& pool, std::uint64_t root_offset, std::uint64_t page_file_id) {
  if (root_offset < pool.heap_begin() || root_offset % alignof(RootBlock) != 0 ||
      root_offset > pool.heap_end() - sizeof(RootBlock)) {
    refuse(root_offset, "the root lies outside the pool's heap");
  }
  RootBlock root;
  std::memcpy(&root, pool.region().at<char>(root_offset), sizeof(root));
  if (std::memcmp(root.magic, redo::kRootMagic, sizeof(root.magic)) != 0) {
    refuse(root_offset, "no redo log root there (bad magic)");
  }
  if (root.version != redo::kLayoutVersion) {
    refuse(root_offset, "layout version " + std::to_string(root.version) + ", this build reads " +
                            std::to_string(redo::kLayoutVersion));
  }
  if (root.checksum != redo::root_checksum(root)) refuse(root_offset, "corrupt root (checksum)");
  if (root.region_size == 0 || root.region_size % redo::kRegionAlign != 0 ||
      root.region_offset < pool.heap_begin() || root.region_offset % pm::kCacheLine != 0 ||
      root.region_offset > pool.heap_end() ||
      root.region_size > pool.heap_end() - root.region_offset) {
    refuse(root_offset, "corrupt root (its region lies outside the pool's heap)");
  }
  if (root.page_file_id != page_file_id) {
    refuse(root_offset, "it belongs to page file " + std::to_string(root.page_file_id) +
                            ", not to page file " + std::to_string(page_file_id));
  }
  return root;
}

}  // namespace

struct RedoLog::Impl {
  Impl(pm::Pool& p, std::uint64_t root_at, const RootBlock& root)
      : region(p.region()),
        root_offset(root_at),
        root_field(p.region().at<std::uint64_t>(root_at + offsetof(RootBlock, checkpoint_lsn))),
        region_offset(root.region_offset),
        double_write_root(root.double_write_root),
        size(root.region_size),
        base(p.region().at<std::byte>(root.region_offset)),
        seed(root.seed),
        max_unit(std::min<std::uint64_t>(root.region_size / 2, UINT32_MAX & ~redo::kFlagMask)),
        tail(root.region_size) {
    tail.reset(root.checkpoint_lsn, root.checkpoint_lsn, {});
    durable.store(root.checkpoint_lsn, std::memory_order_relaxed);
  }

  // Flushes the region bytes of [from, to), which span at most one region size.
  void flush_range(Lsn from, Lsn to) noexcept {
    const std::uint64_t at = from % size;
    const std::uint64_t first = std::min(to - from, size - at);
    region.flush(base + at, first);
    if (to - from > first) region.flush(base, to - from - first);
  }

  pm::PmRegion& region;
  const std::uint64_t root_offset;
  std::uint64_t* const root_field;  // the root's checkpoint LSN
  const std::uint64_t region_offset;
  const std::uint64_t double_write_root;
  const std::uint64_t size;
  std::byte* const base;
  const std::uint32_t seed;
  const std::uint64_t max_unit;

  RedoLogTail tail;
  std::atomic<Lsn> durable{0};
  std::mutex commit_mutex;      // one group flush at a time
  std::mutex checkpoint_mutex;  // one checkpoint at a time
  bool ready = false;           // appends allowed: created here, or replayed

  std::atomic<std::uint64_t> units{0};
  std::atomic<std::uint64_t> bytes_appended{0};
  std::atomic<std::uint64_t> commits{0};
  std::atomic<std::uint64_t> group_flushes{0};
  std::atomic<std::uint64_t> checkpoints{0};
};

RedoLog::RedoLog(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RedoLog::~RedoLog() = default;

std::unique_ptr<RedoLog> RedoLog::create(pm::Pool& pool, pm::Allocator& allocator,
                                         std::size_t bytes, std::uint64_t page_file_id,
                                         std::uint64_t double_write_root) {
  const std::uint64_t size = round_up(std::max<std::size_t>(bytes, 1), redo::kRegionAlign);
  // The allocator's largest block: a run whose usable size fits its u32 header field.
  if (size > UINT32_MAX - pm::kLegacyChunkSize) {
    throw RedoLogError("redo log: " + std::to_string(size) +
                       " bytes is more than the largest block the pool hands out (4 GiB)");
  }
  const std::optional<PoolBlocks> blocks =
      allocate_root_and_region(allocator, sizeof(RootBlock), size);
  if (!blocks) {
    throw RedoLogError("redo log: no room in the pool for a log of " + std::to_string(size) +
                       " bytes");
  }
  const std::uint64_t root_at = blocks->root;
  const std::uint64_t region_at = blocks->region;
  RootBlock root{};
  std::memcpy(root.magic, redo::kRootMagic, sizeof(root.magic));
  root.version = redo::kLayoutVersion;
  root.seed = new_seed();
  root.region_offset = region_at;
  root.region_size = size;
  root.page_file_id = page_file_id;
  root.double_write_root = double_write_root;
  root.checksum = redo::root_checksum(root);
  root.checkpoint_lsn = 0;
  pm::PmRegion& region = pool.region();
  {
    pm::OpScope scope(pm::OpKind::kLog);
    std::memcpy(region.at<char>(root_at), &root, sizeof(root));
    region.persist(region.at<char>(root_at), sizeof(root));
  }
  auto impl = std::make_unique<Impl>(pool, root_at, root);
  impl->ready = true;  // a new log: nothing to replay, and the region's bytes are another log's
  return std::unique_ptr<RedoLog>(new RedoLog(std::move(impl)));
}

std::unique_ptr<RedoLog> RedoLog::open(pm::Pool& pool, std::uint64_t root_offset,
                                       std::uint64_t page_file_id) {
  const RootBlock root = read_root(pool, root_offset, page_file_id);
  return std::unique_ptr<RedoLog>(new RedoLog(std::make_unique<Impl>(pool, root_offset, root)));
}

std::uint64_t RedoLog::root_offset() const noexcept { return impl_->root_offset; }
std::uint64_t RedoLog::double_write_root() const noexcept { return impl_->double_write_root; }

void RedoLog::for_each_block(const std::function<void(std::uint64_t offset)>& visit) const {
  visit(impl_->root_offset);
  visit(impl_->region_offset);
}

Lsn RedoLog::append(std::span<const LogRecord> records) {
  Impl& m = *impl_;
  if (!m.ready) throw RedoLogError("redo log: append() before replay() on an opened log");
  const std::uint64_t length = redo::unit_size(records);
  if (length > m.max_unit) {
    throw RedoLogError("redo log: a unit of " + std::to_string(length) +
                       " bytes can never fit a log of " + std::to_string(m.size) +
                       " bytes (at most half of it)");
  }
  const std::optional<RedoLogTail::Reservation> r = m.tail.reserve(length);
  if (!r) return 0;
  if (r->padding != 0) {
    redo::encode_marker(m.base + r->start % m.size, r->start, r->padding, redo::kPaddingFlag,
                        m.seed);
  }
  redo::encode_unit(m.base + r->unit % m.size, r->unit, records, m.seed);
  m.tail.finish(r->ticket);
  m.units.fetch_add(1, std::memory_order_relaxed);
  m.bytes_appended.fetch_add(length, std::memory_order_relaxed);
  return r->end;
}

void RedoLog::commit(Lsn lsn) {
  Impl& m = *impl_;
  m.commits.fetch_add(1, std::memory_order_relaxed);
  if (lsn <= m.durable.load(std::memory_order_acquire)) return;
  if (lsn > m.tail.end()) {
    throw RedoLogError("redo log: commit(" + std::to_string(lsn) + ") beyond the end LSN " +
                       std::to_string(m.tail.end()));
  }
  std::lock_guard lock(m.commit_mutex);
  const Lsn from = m.durable.load(std::memory_order_relaxed);
  if (lsn <= from) return;  // a group flush while we waited covered it
  // Units before ours may still be being written by other threads; they are short copies.
  m.tail.wait_written(lsn);
  const Lsn to = m.tail.written();
  pm::OpScope scope(pm::OpKind::kLog);
  // Padding bodies in the range are flushed too: clean lines, at most once a lap.
  m.flush_range(from, to);
  m.region.fence();
  m.durable.store(to, std::memory_order_release);
  m.group_flushes.fetch_add(1, std::memory_order_relaxed);
}

Lsn RedoLog::durable_lsn() const noexcept { return impl_->durable.load(std::memory_order_acquire); }
Lsn RedoLog::end_lsn() const noexcept { return impl_->tail.end(); }
Lsn RedoLog::checkpoint_lsn() const noexcept { return impl_->tail.checkpoint(); }

bool RedoLog::wants_checkpoint(double fraction) const noexcept {
  return static_cast<double>(impl_->tail.used()) > fraction * static_cast<double>(impl_->size);
}

void RedoLog::checkpoint(Lsn lsn) {
  Impl& m = *impl_;
  std::lock_guard lock(m.checkpoint_mutex);
  m.checkpoints.fetch_add(1, std::memory_order_relaxed);
  // Another thread's checkpoint got further already: nothing to do.
  if (lsn <= m.tail.checkpoint()) return;
  if (!m.tail.valid_checkpoint(lsn, m.durable.load(std::memory_order_acquire))) {
    throw RedoLogError("redo log: checkpoint(" + std::to_string(lsn) +
                       ") is not a unit boundary between the checkpoint LSN " +
                       std::to_string(m.tail.checkpoint()) + " and the durable LSN " +
                       std::to_string(m.durable.load(std::memory_order_acquire)));
  }
  pm::OpScope scope(pm::OpKind::kLog);
  m.region.store_u64_persist(m.root_field, lsn);
  m.tail.set_checkpoint(lsn);  // only now may appends reuse the space before it
}

std::size_t RedoLog::replay(
    const std::function<void(Lsn end_lsn, std::span<const LogRecord> records)>& visit) {
  Impl& m = *impl_;
  const Lsn checkpoint = m.tail.checkpoint();
  std::vector<LogRecord> records;
  std::vector<Lsn> skips;
  Lsn at = checkpoint;
  std::uint64_t used = 0;  // region bytes the units visited so far occupy
  std::size_t visited = 0;
  for (;;) {
    const std::uint64_t position = at % m.size;
    const std::optional<redo::ParsedUnit> unit =
        redo::parse_unit(m.base + position, m.size - position, at, m.seed, records);
    // A chain longer than the region would have overwritten its own start: not a log.
    if (!unit || used + unit->length > m.size) break;
    used += unit->length;
    switch (unit->kind) {
      case redo::UnitKind::kRecords:
        visit(at + unit->length, records);
        ++visited;
        at += unit->length;
        break;
      case redo::UnitKind::kPadding: at += unit->length; break;
      case redo::UnitKind::kLapSkip:
        skips.push_back(at);
        at += unit->length + m.size;
        break;
    }
  }
  // A full log has no stale bytes to guard against (and no room for the skip).
  if (m.size - used >= redo::kUnitHeaderSize) {
    pm::OpScope scope(pm::OpKind::kLog);
    std::byte* skip = m.base + at % m.size;
    redo::encode_marker(skip, at, redo::kUnitHeaderSize, redo::kLapSkipFlag, m.seed);
    m.region.persist(skip, redo::kUnitHeaderSize);
    skips.push_back(at);
    at += redo::kUnitHeaderSize + m.size;
  }
  m.tail.reset(at, checkpoint, std::move(skips));
  m.durable.store(at, std::memory_order_release);
  m.ready = true;
  return visited;
}

RedoLogStats RedoLog::stats() const noexcept {
  const Impl& m = *impl_;
  RedoLogStats s;
  s.units = m.units.load(std::memory_order_relaxed);
  s.bytes_appended = m.bytes_appended.load(std::memory_order_relaxed);
  s.commits = m.commits.load(std::memory_order_relaxed);
  s.group_flushes = m.group_flushes.load(std::memory_order_relaxed);
  s.checkpoints = m.checkpoints.load(std::memory_order_relaxed);
  s.used_bytes = m.tail.used();
  s.capacity = m.size;
  return s;
}

}  // namespace pmcached::buffer

// Pool: the superblock of layout version 3 (reads 1 and 2) — formatting, validation, the upgrade
// from 1 to 2 and the run-time fields.
#include "engine/pm/pool.h"

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <xxhash.h>

namespace pmcached::pm {
namespace {

constexpr char kMagic[8] = {'P', 'M', 'C', 'A', 'C', 'H', 'E', 'D'};
constexpr std::size_t kEngineNameSize = 32;

// The superblock at offset 0 (no padding: the static_asserts below pin the layout).
// Line 0 holds the immutable part (checksummed, magic included);
// the run-time fields live on line 1, each written with one failure-atomic 8-byte store.
// flush_all's (time, cas) pair is double-buffered: the inactive slot is written and persisted,
// then flush_select switches to it, so the pair changes atomically.
struct Superblock {
  char magic[8];                 // "PMCACHED", written last when formatting
  std::uint32_t layout_version;  // kLayoutVersion
  std::uint32_t reserved;        // 0
  std::uint64_t pool_size;       // bytes of the whole pool
  char engine[kEngineNameSize];  // NUL-padded engine name
  std::uint64_t checksum;        // XXH64 of bytes [0, 56)
  // Line 1: run-time fields.
  std::uint64_t root;   // the engine's root offset (0 = none)
  std::uint64_t clean;  // 1 after a clean shutdown, 0 while in use
  std::uint64_t cas_high_water;
  std::uint64_t flush_select;     // which flush_slot is current (0 or 1)
  std::int64_t flush_slot[2][2];  // {time, cas}
  // Line 2: chunks of the heap below which every chunk header lies (allocator.h; layouts 2, 3).
  std::uint64_t chunk_high_water;
  // Layout 3 (zero in layouts 1 and 2): the heap's slab settings, fixed when formatting.
  std::uint32_t slab_page_size;
  std::uint32_t slab_min_size;
  std::uint64_t slab_growth_factor;  // the bits of a double
  std::uint32_t slab_chunk_max;
  std::uint32_t reserved2;      // 0
  std::uint64_t slab_checksum;  // XXH64 of [136, 160)
  std::uint64_t reserved3[3];   // 0
};
static_assert(offsetof(Superblock, layout_version) == 8);
static_assert(offsetof(Superblock, pool_size) == 16);
static_assert(offsetof(Superblock, engine) == 24);
static_assert(offsetof(Superblock, checksum) == 56);
static_assert(offsetof(Superblock, root) == 64);
static_assert(offsetof(Superblock, clean) == 72);
static_assert(offsetof(Superblock, cas_high_water) == 80);
static_assert(offsetof(Superblock, flush_select) == 88);
static_assert(offsetof(Superblock, flush_slot) == 96);
static_assert(offsetof(Superblock, chunk_high_water) == 128);
static_assert(offsetof(Superblock, slab_page_size) == 136);
static_assert(offsetof(Superblock, slab_checksum) == 160);
static_assert(sizeof(Superblock) == 192 && sizeof(Superblock) <= kSuperblockSize);
constexpr std::size_t kChecksummedBytes = offsetof(Superblock, checksum);

std::mutex g_flush_state_mutex;  // serialises writers of the double-buffered flush state

std::uint64_t checksum_of(const Superblock& sb) noexcept {
  return XXH64(&sb, kChecksummedBytes, 0);
}

std::uint64_t slab_checksum_of(const Superblock& sb) noexcept {
  constexpr std::size_t kBegin = offsetof(Superblock, slab_page_size);
  return XXH64(&sb.slab_page_size, offsetof(Superblock, slab_checksum) - kBegin, 0);
}

SlabSettings slab_settings_of(const Superblock& sb) noexcept {
  SlabSettings s;
  s.page_size = sb.slab_page_size;
  s.min_size = sb.slab_min_size;
  s.growth_factor = std::bit_cast<double>(sb.slab_growth_factor);
  s.chunk_max = sb.slab_chunk_max;
  return s;
}

// The checksum `sb` had as a layout 1 superblock: a layout upgrade writes the version before
// the checksum, so a crash between the two leaves this one.
std::uint64_t checksum_as_layout_1(const Superblock& sb) noexcept {
  Superblock old;
  std::memcpy(static_cast<void*>(&old), &sb, sizeof(old));
  old.layout_version = kOldestReadableLayout;
  return checksum_of(old);
}

// The superblock that formatting writes before its magic: fields, and the checksum they will
// have once the magic is in place.
Superblock fresh_superblock(std::string_view engine, std::uint64_t pool_size,
                            const SlabSettings& slabs) noexcept {
  Superblock sb;
  std::memset(static_cast<void*>(&sb), 0, sizeof(sb));
  sb.layout_version = kLayoutVersion;
  sb.pool_size = pool_size;
  sb.slab_page_size = slabs.page_size;
  sb.slab_min_size = slabs.min_size;
  sb.slab_growth_factor = std::bit_cast<std::uint64_t>(slabs.growth_factor);
  sb.slab_chunk_max = slabs.chunk_max;
  sb.slab_checksum = slab_checksum_of(sb);
  std::memcpy(sb.engine, engine.data(), engine.size());
  std::memcpy(sb.magic, kMagic, sizeof(kMagic));
  sb.checksum = checksum_of(sb);
  std::memset(sb.magic, 0, sizeof(sb.magic));
  return sb;
}

std::uint64_t load(const std::uint64_t& field) noexcept {
  return std::atomic_ref<const std::uint64_t>(field).load(std::memory_order_acquire);
}

std::uint64_t* u64(std::int64_t* field) noexcept { return reinterpret_cast<std::uint64_t*>(field); }

Superblock* superblock(PmRegion& region) noexcept { return region.at<Superblock>(0); }

// Unformatted: no magic, and every 8-byte word either zero or what formatting for this
// engine and size writes — a new pool, or a format interrupted before its magic (even one
// torn at 8-byte granularity). Anything else is foreign data and is not touched.
bool is_unformatted(const Superblock& sb, const Superblock& fresh) noexcept {
  std::uint64_t words[sizeof(Superblock) / 8];
  std::uint64_t expected[sizeof(Superblock) / 8];
  std::memcpy(words, &sb, sizeof(words));
  std::memcpy(expected, &fresh, sizeof(expected));
  if (words[0] != 0) return false;  // the magic
  for (std::size_t i = 1; i < std::size(words); ++i) {
    if (words[i] != 0 && words[i] != expected[i]) return false;
  }
  return true;
}

}  // namespace

Pool::Pool(std::unique_ptr<PmRegion> region, bool created)
    : region_(std::move(region)), created_(created) {}

std::unique_ptr<Pool> Pool::open_file(const std::string& path, std::size_t size,
                                      std::string_view engine, const SlabSettings& slabs) {
  std::error_code ec;
  if (size < kMinPoolSize && !std::filesystem::exists(path, ec)) {
    throw PoolError("pool " + path + ": size " + std::to_string(size) +
                    " is below the minimum of " + std::to_string(kMinPoolSize) + " bytes");
  }
  bool created = false;
  std::unique_ptr<PmRegion> region = PmRegion::map_file(path, size, created);
  return open_region(std::move(region), engine, slabs, "pool " + path);
}

std::unique_ptr<Pool> Pool::open_region(std::unique_ptr<PmRegion> region, std::string_view engine,
                                        const SlabSettings& slabs) {
  return open_region(std::move(region), engine, slabs, "pool (in memory)");
}

std::unique_ptr<Pool> Pool::open_region(std::unique_ptr<PmRegion> region, std::string_view engine,
                                        const SlabSettings& slabs, const std::string& where) {
  if (const auto error = slab_settings_error(slabs)) throw PoolError(where + ": " + *error);
  if (engine.empty() || engine.size() >= kEngineNameSize) {
    throw PoolError("engine name '" + std::string(engine) + "' is empty or too long for a pool");
  }
  if (region->size() < kMinPoolSize) {
    throw PoolError(where + " is truncated or not a pmcached pool (" +
                    std::to_string(region->size()) + " bytes)");
  }
  const bool unformatted =
      is_unformatted(*superblock(*region), fresh_superblock(engine, region->size(), slabs));
  std::unique_ptr<Pool> pool(new Pool(std::move(region), unformatted));
  pool->layout_version_ = kLayoutVersion;
  if (unformatted) {
    pool->format(engine, slabs);
  } else {
    pool->validate(engine, where);
    pool->was_clean_ = load(superblock(*pool->region_)->clean) != 0;
  }
  // The clean flag stays as it was: the caller may still refuse the pool (a corrupt index)
  // and must leave it untouched; it calls mark_in_use() once it serves from the pool.
  return pool;
}

void Pool::format(std::string_view engine, const SlabSettings& slabs) {
  Superblock* sb = superblock(*region_);
  // Fields first (persisted), the magic last: a crash before the magic is durable leaves a
  // pool that the next open formats again.
  const Superblock fresh = fresh_superblock(engine, region_->size(), slabs);
  std::memcpy(static_cast<void*>(sb), &fresh, sizeof(fresh));
  region_->persist(sb, sizeof(*sb));
  std::memcpy(sb->magic, kMagic, sizeof(kMagic));
  region_->persist(sb->magic, sizeof(kMagic));
}

void Pool::validate(std::string_view engine, std::string_view where) {
  const Superblock& sb = *superblock(*region_);
  const std::string at(where);
  if (std::memcmp(sb.magic, kMagic, sizeof(kMagic)) != 0) {
    throw PoolError(at + " is not a pmcached pool");
  }
  // The version before the checksum: another layout version may checksum differently.
  if (sb.layout_version != kLayoutVersion && sb.layout_version != kMarkedLegacyLayout &&
      sb.layout_version != kOldestReadableLayout) {
    throw PoolError(at + " has layout version " + std::to_string(sb.layout_version) +
                    ", this pmcached reads versions " + std::to_string(kOldestReadableLayout) +
                    " to " + std::to_string(kLayoutVersion));
  }
  layout_version_ = sb.layout_version;
  if (sb.checksum != checksum_of(sb)) {
    // An upgrade from layout 1 to 2 interrupted between its version and its checksum.
    if (sb.layout_version != kMarkedLegacyLayout || sb.checksum != checksum_as_layout_1(sb)) {
      throw PoolError(at + " superblock is corrupt");
    }
    layout_version_ = kOldestReadableLayout;
  }
  if (layout_version_ == kLayoutVersion &&
      (sb.slab_checksum != slab_checksum_of(sb) || slab_settings_error(slab_settings_of(sb)))) {
    throw PoolError(at + " superblock is corrupt (slab settings)");
  }
  const std::string_view name(sb.engine, strnlen(sb.engine, sizeof(sb.engine)));
  if (name != engine) {
    throw PoolError(at + " was created by engine '" + std::string(name) + "', not '" +
                    std::string(engine) + "'");
  }
  if (sb.pool_size > region_->size()) {
    throw PoolError(at + " is truncated or not a pmcached pool (" +
                    std::to_string(region_->size()) + " bytes)");
  }
  if (sb.pool_size != region_->size()) {
    throw PoolError(at + " is " + std::to_string(region_->size()) +
                    " bytes but its superblock says " + std::to_string(sb.pool_size));
  }
}

std::uint32_t Pool::layout_version() const noexcept { return layout_version_; }

std::optional<SlabSettings> Pool::slab_settings() const noexcept {
  if (layout_version_ != kLayoutVersion) return std::nullopt;
  return slab_settings_of(*superblock(*region_));
}

HeapGeometry Pool::heap_geometry() const {
  const std::optional<SlabSettings> slabs = slab_settings();
  return slabs ? HeapGeometry::slabs(*slabs) : HeapGeometry::legacy();
}

std::uint64_t* Pool::chunk_high_water_field() noexcept {
  return &superblock(*region_)->chunk_high_water;
}

void Pool::upgrade_layout() noexcept {
  if (layout_version_ != kOldestReadableLayout) return;
  Superblock* sb = superblock(*region_);
  // Version, then checksum: validate() reads a crash between them as layout 1 (the mark, written
  // before this, is then ignored and set again).
  Superblock next;
  std::memcpy(static_cast<void*>(&next), sb, sizeof(next));
  next.layout_version = kMarkedLegacyLayout;
  std::uint64_t version_word = 0;  // layout_version and reserved: one aligned 8-byte word
  std::memcpy(&version_word, &next.layout_version, sizeof(version_word));
  region_->store_u64_persist(reinterpret_cast<std::uint64_t*>(&sb->layout_version), version_word);
  region_->store_u64_persist(&sb->checksum, checksum_of(next));
  layout_version_ = kMarkedLegacyLayout;
}

std::uint64_t Pool::root() const noexcept { return load(superblock(*region_)->root); }

void Pool::set_root(std::uint64_t offset) noexcept {
  region_->store_u64_persist(&superblock(*region_)->root, offset);
}

std::uint64_t* Pool::root_field() noexcept { return &superblock(*region_)->root; }

std::uint64_t Pool::cas_high_water() const noexcept {
  return load(superblock(*region_)->cas_high_water);
}

void Pool::set_cas_high_water(std::uint64_t cas) noexcept {
  region_->store_u64_persist(&superblock(*region_)->cas_high_water, cas);
}

std::int64_t Pool::flush_time() const noexcept {
  const Superblock* sb = superblock(*region_);
  const std::uint64_t slot = load(sb->flush_select) & 1;
  return static_cast<std::int64_t>(
      load(*reinterpret_cast<const std::uint64_t*>(&sb->flush_slot[slot][0])));
}

std::uint64_t Pool::flush_cas() const noexcept {
  const Superblock* sb = superblock(*region_);
  const std::uint64_t slot = load(sb->flush_select) & 1;
  return load(*reinterpret_cast<const std::uint64_t*>(&sb->flush_slot[slot][1]));
}

void Pool::set_flush_state(std::int64_t time, std::uint64_t cas) noexcept {
  std::lock_guard lock(g_flush_state_mutex);
  Superblock* sb = superblock(*region_);
  const std::uint64_t next = (load(sb->flush_select) & 1) ^ 1;
  std::atomic_ref<std::uint64_t>(*u64(&sb->flush_slot[next][0]))
      .store(static_cast<std::uint64_t>(time), std::memory_order_relaxed);
  std::atomic_ref<std::uint64_t>(*u64(&sb->flush_slot[next][1]))
      .store(cas, std::memory_order_relaxed);
  region_->persist(sb->flush_slot[next], sizeof(sb->flush_slot[next]));
  region_->store_u64_persist(&sb->flush_select, next);
}

void Pool::mark_in_use() noexcept { region_->store_u64_persist(&superblock(*region_)->clean, 0); }

void Pool::mark_clean() noexcept {
  region_->sync();
  region_->store_u64_persist(&superblock(*region_)->clean, 1);
  region_->sync();
}

}  // namespace pmcached::pm

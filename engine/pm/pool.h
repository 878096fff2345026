// Pool: one pool file (or in-memory region) with its superblock, for one persistent engine.
//
// Layout version 3 (versions 1 and 2 still open):
//   [0, 4096)       superblock (below)
//   [4096, size)    heap, managed by the Allocator (chunks of item records and index nodes)
// Superblock: magic "PMCACHED", layout version, pool size, engine name (the immutable part,
// covered by an xxHash checksum), then 8-byte fields that change at run time, each written
// with one failure-atomic store: the engine's root, the clean-shutdown flag, the cas high-water
// mark and the flush_all state. Bytes: [0,8) magic, [8,12) layout version, [16,24) pool size,
// [24,56) engine name, [56,64) XXH64 of [0,56); line 1: root, clean flag, cas high-water,
// flush_all selector, then two {time, cas} slots (the inactive slot is written and persisted,
// then the selector flips: the pair changes atomically); line 2: the allocator's chunk
// high-water mark ([128,136), see allocator.h; layouts 2 and 3), then (layout 3) the slab
// settings that decide where the heap's blocks are ([136,160): slab page size, -n, -f,
// slab_chunk_max) with their own XXH64 at [160,168), fixed at formatting: a reopened pool keeps
// them whatever the flags say. Layouts 1 and 2 have the old geometry (HeapGeometry::legacy) and
// zeros there. Formatting persists everything but the magic, then the magic: a pool without
// magic whose every 8-byte word is zero or what that format writes (a new or interrupted one)
// is formatted again; anything else is refused.
//
// Opening a pool made by another engine or layout version, or a truncated or corrupt one,
// throws PoolError with a one-line message naming both sides, and changes nothing. A layout 1
// pool (no high-water mark) is read; the allocator's first rebuild sets its mark and then
// upgrade_layout() makes it layout 2, which a layout-1 pmcached refuses (as a layout-2 one
// refuses layout 3). Pools are never upgraded to layout 3: that would move every block.
// Layout history (of the superblock and of the heap's chunk headers): docs/LAYOUTS.md.
//
// Thread safety: set_*() may be called from any thread; each is one atomic persist.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "engine/pm/allocator.h"
#include "engine/pm/pm_region.h"
#include "engine/pm/slab_classes.h"

namespace pmcached::pm {

class PoolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr std::uint32_t kLayoutVersion = 3;         // what new pools get
inline constexpr std::uint32_t kMarkedLegacyLayout = 2;    // layout 1 + the high-water mark
inline constexpr std::uint32_t kOldestReadableLayout = 1;  // read, then upgraded to 2
inline constexpr std::uint64_t kSuperblockSize = 4096;
inline constexpr std::size_t kMinPoolSize = 4u << 20;

class Pool {
 public:
  // Opens `path` for `engine`, creating it with `size` bytes if it does not exist; a new pool
  // gets `slabs` (an existing one keeps its own: slab_settings()).
  static std::unique_ptr<Pool> open_file(const std::string& path, std::size_t size,
                                         std::string_view engine, const SlabSettings& slabs = {});
  // Formats or opens `region` (tests: in-memory regions, restarts from crash images).
  static std::unique_ptr<Pool> open_region(std::unique_ptr<PmRegion> region,
                                           std::string_view engine, const SlabSettings& slabs = {});

  [[nodiscard]] PmRegion& region() noexcept { return *region_; }
  [[nodiscard]] bool created() const noexcept { return created_; }
  // True if the pool was closed cleanly last time (false for a new pool).
  [[nodiscard]] bool was_clean() const noexcept { return was_clean_; }

  [[nodiscard]] std::uint32_t layout_version() const noexcept;
  // The slab settings the pool was formatted with; nullopt for a layout 1 or 2 pool.
  [[nodiscard]] std::optional<SlabSettings> slab_settings() const noexcept;
  // Where the heap's blocks are: what an Allocator of this pool must be given.
  [[nodiscard]] HeapGeometry heap_geometry() const;

  [[nodiscard]] std::uint64_t heap_begin() const noexcept { return kSuperblockSize; }
  [[nodiscard]] std::uint64_t heap_end() const noexcept { return region_->size(); }

  [[nodiscard]] std::uint64_t root() const noexcept;
  void set_root(std::uint64_t offset) noexcept;
  [[nodiscard]] std::uint64_t* root_field() noexcept;  // for engines that swing the root

  [[nodiscard]] std::uint64_t cas_high_water() const noexcept;
  void set_cas_high_water(std::uint64_t cas) noexcept;

  [[nodiscard]] std::int64_t flush_time() const noexcept;
  [[nodiscard]] std::uint64_t flush_cas() const noexcept;
  void set_flush_state(std::int64_t time, std::uint64_t cas) noexcept;

  // The allocator's persistent chunk high-water mark (allocator.h). Meaningful only when
  // has_chunk_high_water(): a layout 1 pool has none until upgrade_layout().
  [[nodiscard]] std::uint64_t* chunk_high_water_field() noexcept;
  [[nodiscard]] bool has_chunk_high_water() const noexcept {
    return layout_version_ != kOldestReadableLayout;
  }
  // Layout 1 -> 2, once the caller has persisted a valid high-water mark. No-op on layouts 2, 3.
  void upgrade_layout() noexcept;

  // Start of a run: clears the clean-shutdown flag (persisted). Call it once the pool is
  // accepted (after recovery): open_file()/open_region() write nothing to an existing pool,
  // so a pool refused after them (e.g. a corrupt index) is left byte-identical.
  void mark_in_use() noexcept;
  // Clean shutdown: syncs the whole mapping, then sets the clean flag (persisted).
  void mark_clean() noexcept;

 private:
  Pool(std::unique_ptr<PmRegion> region, bool created);
  // `where` names the pool in error messages ("pool <path>").
  static std::unique_ptr<Pool> open_region(std::unique_ptr<PmRegion> region,
                                           std::string_view engine, const SlabSettings& slabs,
                                           const std::string& where);
  void format(std::string_view engine, const SlabSettings& slabs);
  void validate(std::string_view engine, std::string_view where);

  std::unique_ptr<PmRegion> region_;
  bool created_;
  bool was_clean_ = false;
  std::uint32_t layout_version_ = kLayoutVersion;  // as read (an interrupted upgrade reads 1)
};

}  // namespace pmcached::pm

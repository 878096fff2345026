// Allocator: blocks of the pool's heap for item records and index nodes.
//
// Write-optimal: the only persistent allocator metadata is one header per chunk (its block
// size), written once when a free chunk is given a size class. Which blocks are in use is NOT
// persisted: at start-up the owner marks every block reachable from the engine's root
// (mark_reachable), and finish_rebuild() makes everything else free. A crash therefore never
// leaks a block (an unpublished block is unreachable, so free) and never lets two owners share
// one (a published block is reachable, so in use).
//
// Heap layout: chunks of kChunkSize bytes. A small chunk holds blocks of one size class
// (64 B .. kMaxSmallBlock); a large block takes a run of whole chunks.
// Chunk header (first 64 bytes of the chunk): u32 magic, u32 block size, u32 chunk count,
// u32 checksum of the three. A small chunk: count 1, block size = its class, block i at
// chunk + kChunkHeaderSize + i * block size. A large block: only the first chunk of its run
// has a header (block size = count * kChunkSize - kChunkHeaderSize); the following chunks
// have none (their bytes are block data; rebuild skips them). Freeing a large block (or
// dropping it in finish_rebuild) zeroes and persists the header areas of its chunks, the
// first one last, so block data is never read as a header. This layout is part of the pool's
// layout version (pool.h); its history is in docs/LAYOUTS.md.
//
// High-water mark (an allocator over a Pool): the pool's superblock persists how many chunks from
// the heap's start have ever been given a header; rebuild reads only those, and growing past the
// mark first reserves the file's blocks (the pool file is sparse), so an empty or half-empty pool
// costs memory, disk and start-up time for what it holds, not for its size. A layout 1 pool has
// no mark: its first rebuild reads every header, then sets the mark and upgrades the pool.
//
// Volatile side data: every block has BlockLinks in DRAM (zeroed when its chunk gets a size class,
// never persisted) for the owner to keep its blocks in lists, e.g. the store's recency order.
//
// Thread safety: allocate()/free() are thread-safe (one mutex; per-thread caches may come
// later). Rebuild calls are single-threaded, before any allocate(). links() and size_class() take
// no lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "engine/pm/pm_region.h"

namespace pmcached::pm {

inline constexpr std::size_t kChunkSize = 256u << 10;
inline constexpr std::size_t kChunkHeaderSize = 64;
inline constexpr std::size_t kMaxSmallBlock = 64u << 10;

// What a block holds. Index nodes and item records never share a chunk, so that evacuating the
// items of a chunk (to change its size class) always frees it. Not persistent: the start-up
// rebuild learns each chunk's use from who marks its blocks.
enum class BlockUse : std::uint8_t { kItem = 0, kIndex = 1 };

// The DRAM side data of one block (see links()).
struct BlockLinks {
  std::uint64_t prev = 0;
  std::uint64_t next = 0;
  std::uint64_t stamp = 0;
};

struct AllocatorStats {
  std::uint64_t heap_bytes = 0;    // capacity of the heap
  std::uint64_t bytes_in_use = 0;  // sum of the block sizes handed out
  std::uint64_t blocks_in_use = 0;
  std::uint64_t chunks_in_use = 0;
  std::uint64_t chunks_total = 0;
  std::uint64_t chunks_high_water = 0;  // chunks below the high-water mark (all: no pool)
};

class Pool;

class Allocator {
 public:
  // Manages [heap_begin, heap_end) of `region`. A new heap needs no formatting: chunks
  // without a valid header are free.
  // On a heap that may already hold chunk headers (any reopened pool), run the rebuild
  // sequence below before the first allocate().
  Allocator(PmRegion& region, std::uint64_t heap_begin, std::uint64_t heap_end);
  // Manages `pool`'s heap with its persistent high-water mark (see above). Every allocator of a
  // pool must be made this way: one without the mark would write headers the next rebuild
  // does not read.
  explicit Allocator(Pool& pool);
  ~Allocator();
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  // A block of at least `size` bytes (contents undefined), or 0 when the heap is full (or the
  // pool's file system has no room for the chunks it would need).
  [[nodiscard]] std::uint64_t allocate(std::size_t size, BlockUse use = BlockUse::kItem) noexcept;
  // Returns a block; the caller guarantees nothing reachable refers to it any more.
  void free(std::uint64_t offset) noexcept;
  // When allocate(size) fails because every chunk is committed to other size classes: the
  // [begin, end) offsets of up to `count` chunks (or large runs) whose blocks were allocated
  // longest ago (the chunks whose newest block is the oldest), not of size's own class. The owner
  // frees the blocks in them (memcached's slab rebalancing does the same for its slabs). Only
  // item chunks are candidates.
  [[nodiscard]] std::vector<std::pair<std::uint64_t, std::uint64_t>> evacuation_candidates(
      std::size_t size, std::size_t count) const;

  // The size of the block that allocate(size) would hand out (its size class).
  [[nodiscard]] std::size_t rounded_size(std::size_t size) const noexcept;
  // The size class allocate(size) uses: 0 .. class_count() - 1, the last one for large blocks.
  [[nodiscard]] std::size_t size_class(std::size_t size) const noexcept;
  [[nodiscard]] std::size_t class_count() const noexcept;
  // The side data of the block at `offset`, which the caller owns (allocated and not freed).
  [[nodiscard]] BlockLinks& links(std::uint64_t offset) const noexcept;

  // The usable size of the block at `offset`.
  [[nodiscard]] std::size_t block_size(std::uint64_t offset) const noexcept;

  // Start-up rebuild: begin, mark every reachable block, finish. mark_reachable() returns
  // false if `offset` is not the start of a block in a valid chunk (a corrupt reference).
  void begin_rebuild();
  [[nodiscard]] bool mark_reachable(std::uint64_t offset, BlockUse use = BlockUse::kItem) noexcept;
  void finish_rebuild();

  [[nodiscard]] AllocatorStats stats() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pmcached::pm

// Allocator: blocks of a heap for item records and index nodes.
//
// Write-optimal: the only persistent allocator metadata is one header per chunk (its block
// size), written once when a free chunk is given a size class. Which blocks are in use is NOT
// persisted: at start-up the owner marks every block reachable from the engine's root
// (mark_reachable), and finish_rebuild() makes everything else free. A crash therefore never
// leaks a block (an unpublished block is unreachable, so free) and never lets two owners share
// one (a published block is reachable, so in use).
//
// Geometry (HeapGeometry, given by the caller; a pool persists what decides it, pool.h):
//  - Chunks of chunk_size bytes (memcached's slab pages). A small chunk holds blocks of one size
//    class; a block larger than its table's largest class takes a run of whole chunks.
//  - Item records use item_classes (memcached's slab classes, slab_classes.h); index nodes
//    (BlockUse::kIndex) use their own finer index_classes (64 B .. kMaxSmallBlock): they are not
//    items and memcached has no class for them. Items and index nodes never share a chunk.
//  - Chunk headers: 16 bytes, u32 magic, u32 block size, u32 chunk count, u32 XXH32 of the three.
//    Layout 3 (header_table): one header per chunk in a table at the heap's start, the chunks
//    after it (first chunk at the table's end, rounded up to 4 KiB); a block starts at the chunk
//    start, so a 1 MiB page holds exactly memcached's chunks_per_page; the magic says the use
//    ("CHNK" items, "CHNX" index nodes). Layouts 1 and 2 (HeapGeometry::legacy, 256 KiB chunks):
//    the header fills the first 64 bytes of its chunk, blocks follow it, magic always "CHNK" and
//    the use is learnt from the first block marked.
//  - A small chunk: count 1, block size = its class, block i at data start + i * block size.
//    A large run: only its first chunk has a header (block size = the run's usable bytes); the
//    following chunks have none (rebuild skips them). Freeing a run (or dropping it in
//    finish_rebuild) zeroes and persists the headers of its chunks, the first one last, so no
//    stale run can claim chunks reassigned since. History: docs/LAYOUTS.md.
//
// The heap may be volatile memory (the DRAM heap, PmRegion::anonymous): the same code, with
// flushes and fences that do nothing.
//
// High-water mark (an allocator over a Pool): the pool's superblock persists how many chunks from
// the heap's start have ever been given a header; rebuild reads only those, and growing past the
// mark first reserves the file's blocks (the pool file is sparse), so an empty or half-empty pool
// costs memory, disk and start-up time for what it holds, not for its size. With a header table
// (layout 3) the mark bounds the table entries read and reserved too. A layout 1 pool has no
// mark: its first rebuild reads every header, then sets the mark and upgrades the pool to
// layout 2 (same geometry, with the mark).
//
// Volatile side data: every block has BlockLinks in DRAM (zeroed when its chunk gets a size class,
// never persisted) for the owner to keep its blocks in lists, e.g. the store's recency order.
//
// Thread safety: allocate()/free()/stats are thread-safe (one mutex). Rebuild calls are
// single-threaded, before any allocate(). links(), size_class(), rounded_size() take no lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "engine/pm/pm_region.h"
#include "engine/pm/slab_classes.h"

namespace pmcached::pm {

// Layouts 1 and 2: the chunk size and the in-chunk header area.
inline constexpr std::size_t kLegacyChunkSize = 256u << 10;
inline constexpr std::size_t kChunkHeaderSize = 64;
// The largest index-node class (both layouts; layout 1's largest item class too).
inline constexpr std::size_t kMaxSmallBlock = 64u << 10;
// Bytes of one chunk header (a layout-3 table entry).
inline constexpr std::size_t kChunkHeaderBytes = 16;

// Where blocks are: fixed for a heap's lifetime (a pool persists what decides it).
struct HeapGeometry {
  std::size_t chunk_size = kLegacyChunkSize;
  bool header_table = false;                 // layout 3: headers in a table, not in chunks
  std::vector<std::uint32_t> item_classes;   // ascending block sizes
  std::vector<std::uint32_t> index_classes;  // ascending block sizes

  // Layouts 1 and 2: 256 KiB chunks with in-chunk headers; items and index nodes in 64 B .. 64 KiB
  // classes (each ~1.25x the previous, multiples of 16).
  [[nodiscard]] static HeapGeometry legacy();
  // Layout 3: page_size chunks, a header table, memcached's item classes.
  [[nodiscard]] static HeapGeometry slabs(const SlabSettings& settings);
};

// One item class as `stats slabs` shows it.
struct ClassUsage {
  std::uint32_t block_size = 0;
  std::uint32_t blocks_per_chunk = 0;
  std::uint64_t chunks = 0;         // chunks given to the class
  std::uint64_t blocks_in_use = 0;  // allocated blocks
};

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
  // Manages [heap_begin, heap_end) of `region` with `geometry` (a volatile heap, or tests). A new
  // heap needs no formatting: chunks without a valid header are free. On a heap that may already
  // hold chunk headers (any reopened pool), run the rebuild sequence below before the first
  // allocate(). heap_begin must not be 0 (0 means "no block").
  Allocator(PmRegion& region, std::uint64_t heap_begin, std::uint64_t heap_end,
            HeapGeometry geometry = HeapGeometry::legacy());
  // Manages `pool`'s heap with its geometry (Pool::heap_geometry()) and its persistent
  // high-water mark (see above). Every allocator of a pool must be made this way: one without
  // the mark would write headers the next rebuild does not read.
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

  // The size of the block that allocate(size, use) would hand out (its size class).
  [[nodiscard]] std::size_t rounded_size(std::size_t size,
                                         BlockUse use = BlockUse::kItem) const noexcept;
  // The item class allocate(size) uses: 0 .. class_count() - 1, the last one for large runs.
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
  // Per item class (class_count() - 1 of them), then one for large runs (block size = chunk
  // size, one block per chunk, chunks = the runs' chunks, blocks = the runs).
  [[nodiscard]] std::vector<ClassUsage> item_class_usage() const;
  [[nodiscard]] const HeapGeometry& geometry() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pmcached::pm

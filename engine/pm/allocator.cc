// Allocator: size-class chunks with one persistent header each; everything else in DRAM.
//
// Persistent rules (what makes a crash safe):
//  - A chunk's header is written and persisted before any block of it is handed out.
//  - A large block's run: only its FIRST chunk has a header; the following chunks get none
//    (layout 1: their first bytes are block data). Rebuild walks the chunks in order and skips a
//    run's continuation chunks, so their data is never read as a header.
//  - Before a large run's chunks return to the free pool (free() or finish_rebuild()), the
//    header areas of its continuation chunks are zeroed and persisted, then its first header.
//    So a free chunk's header area holds zeros or a stale single-chunk header (harmless: no
//    reachable block), never a stale run that could claim chunks reassigned since.
//  - High-water mark (a pool's allocator): no chunk at or above the persisted mark has ever held
//    a header since the pool was formatted (a new pool file is all zeros). A header is written
//    only below the mark: growing into new chunks reserves their file blocks (and those of
//    their header-table entries), persists the
//    raised mark, and only then writes a header. A crash between the two leaves chunks below
//    the mark without a header, which are free. So rebuild reads only the headers below the
//    mark and finds every one: restarts and empty pools touch no page of the unused heap.
#include "engine/pm/allocator.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <limits>
#include <set>

#include <xxhash.h>

#include "engine/pm/pool.h"

namespace pmcached::pm {
namespace {

constexpr std::uint32_t kChunkMagic = 0x4B4E4843;       // "CHNK": items (layout 1: any use)
constexpr std::uint32_t kIndexChunkMagic = 0x584E4843;  // "CHNX": index nodes (layout 3)
constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
// The high-water mark rises by at least this many bytes of chunks (4 MiB) at a time: one
// reservation and one persisted store per step instead of per chunk.
constexpr std::uint64_t kHighWaterStep = 4u << 20;

struct ChunkHeader {
  std::uint32_t magic;
  std::uint32_t block_size;
  std::uint32_t chunk_count;
  std::uint32_t checksum;  // XXH32 of the three fields above
};
static_assert(sizeof(ChunkHeader) == kChunkHeaderBytes && sizeof(ChunkHeader) <= kChunkHeaderSize);

std::uint32_t header_checksum(const ChunkHeader& h) noexcept {
  return XXH32(&h, offsetof(ChunkHeader, checksum), kChunkMagic);
}

// 64 B .. kMaxSmallBlock, each ~1.25x the previous, multiples of 16.
std::vector<std::uint32_t> legacy_size_classes() {
  std::vector<std::uint32_t> classes;
  std::uint32_t size = 64;
  while (size < kMaxSmallBlock) {
    classes.push_back(size);
    size = std::max<std::uint32_t>(size + 16, (size * 5 / 4 + 15) & ~15u);
  }
  classes.push_back(static_cast<std::uint32_t>(kMaxSmallBlock));
  return classes;
}

constexpr std::uint64_t kTableAlign = 4096;

enum class ChunkState : std::uint8_t { kFree, kSmall, kLarge, kContinuation };

struct Chunk {
  ChunkState state = ChunkState::kFree;
  std::uint32_t size_class = 0;       // kSmall: index into Impl::sizes (items, then index)
  std::uint32_t run = 0;              // kLarge: chunks in the run
  std::uint32_t used = 0;             // blocks in use (kLarge: 0 or 1)
  std::uint32_t partial_pos = kNone;  // index in its class's partial list
  BlockUse use = BlockUse::kItem;
  std::uint64_t stamp = 0;            // the allocation tick of its newest block
  std::vector<std::uint64_t> bitmap;  // kSmall: blocks in use
  std::uint32_t free_hint = 0;        // kSmall: no bitmap word before it has a free block
  // kSmall, kLarge: one per block. Never reallocated while a block is in use (links() reads the
  // pointer without the mutex).
  std::unique_ptr<BlockLinks[]> links;
};

}  // namespace

HeapGeometry HeapGeometry::legacy() {
  HeapGeometry g;
  g.item_classes = legacy_size_classes();
  g.index_classes = g.item_classes;
  return g;
}

HeapGeometry HeapGeometry::slabs(const SlabSettings& settings) {
  HeapGeometry g;
  g.chunk_size = settings.page_size;
  g.header_table = true;
  g.item_classes = slab_class_sizes(settings);
  g.index_classes = legacy_size_classes();
  return g;
}

struct Allocator::Impl {
  PmRegion& region;
  const HeapGeometry geometry;
  const std::uint64_t chunk_bytes;  // geometry.chunk_size
  const std::uint64_t
      data_offset;  // where a chunk's first block starts (layout 1: after its header)
  std::uint64_t heap_begin;
  std::uint64_t heap_bytes;
  std::uint64_t chunks_begin;  // the first chunk (after the header table in layout 3)
  // Block sizes of every class: the item classes, then the index classes.
  std::vector<std::uint32_t> sizes;
  std::uint32_t item_class_count;
  std::vector<std::uint32_t> blocks_per_chunk;
  std::vector<Chunk> chunks;
  std::set<std::uint32_t> free_chunks;
  // Per class (of `sizes`): chunks with a free block.
  std::vector<std::vector<std::uint32_t>> partial;
  std::uint64_t bytes_in_use = 0;
  std::uint64_t blocks_in_use = 0;
  std::uint64_t chunks_in_use = 0;
  std::uint64_t tick = 0;  // counts allocations; stamps chunks
  // The high-water mark (see the file comment): `high_water` chunks from the heap's start may
  // hold headers. Without a pool (or while a layout 1 pool's is not yet known) it is the whole
  // heap and never persisted.
  Pool* pool = nullptr;
  std::uint64_t* high_water_field = nullptr;  // set while the persisted mark is trusted
  std::uint32_t high_water = 0;
  std::uint32_t step_chunks = 1;  // kHighWaterStep in chunks
  std::uint32_t headers_end = 0;  // a full rebuild: the end of the last chunk with a header
  mutable std::mutex mutex;

  Impl(PmRegion& r, std::uint64_t begin, std::uint64_t end, HeapGeometry g)
      : region(r),
        geometry(std::move(g)),
        chunk_bytes(geometry.chunk_size),
        data_offset(geometry.header_table ? 0 : kChunkHeaderSize),
        heap_begin(begin),
        heap_bytes(end > begin ? end - begin : 0),
        chunks_begin(begin),
        item_class_count(static_cast<std::uint32_t>(geometry.item_classes.size())) {
    sizes = geometry.item_classes;
    sizes.insert(sizes.end(), geometry.index_classes.begin(), geometry.index_classes.end());
    for (std::uint32_t size : sizes) {
      blocks_per_chunk.push_back(static_cast<std::uint32_t>((chunk_bytes - data_offset) / size));
    }
    std::uint64_t count = heap_bytes / chunk_bytes;
    if (geometry.header_table) {
      count = heap_bytes / (chunk_bytes + kChunkHeaderBytes);
      while (count > 0 && table_bytes(count) + count * chunk_bytes > heap_bytes) --count;
      chunks_begin = begin + table_bytes(count);
    }
    chunks.resize(count);
    high_water = static_cast<std::uint32_t>(chunks.size());
    step_chunks =
        static_cast<std::uint32_t>(std::max<std::uint64_t>(1, kHighWaterStep / chunk_bytes));
    reset();
  }

  static std::uint64_t table_bytes(std::uint64_t count) noexcept {
    return (count * kChunkHeaderBytes + kTableAlign - 1) / kTableAlign * kTableAlign;
  }

  // Reserves the file blocks of chunks [from, to) and, with a header table, of their entries.
  bool reserve_chunks(std::uint32_t from, std::uint32_t to) noexcept {
    if (geometry.header_table &&
        region.reserve(heap_begin + std::uint64_t{from} * kChunkHeaderBytes,
                       std::uint64_t{to - from} * kChunkHeaderBytes) != 0) {
      return false;
    }
    return region.reserve(chunk_start(from), std::uint64_t{to - from} * chunk_bytes) == 0;
  }

  // Makes chunks [0, end) writable: reserves the file blocks of the chunks above the mark and
  // persists the raised mark. False if the file system has no room for them.
  bool grow_to(std::uint32_t end) noexcept {
    if (end <= high_water || high_water_field == nullptr) return true;
    const auto total = static_cast<std::uint32_t>(chunks.size());
    std::uint32_t next = std::min(total, std::max(end, high_water + step_chunks));
    if (!reserve_chunks(high_water, next)) {
      next = end;  // perhaps the step did not fit but the chunks needed now do
      if (!reserve_chunks(high_water, next)) return false;
    }
    region.store_u64_persist(high_water_field, next);
    high_water = next;
    return true;
  }

  void reset() {
    for (Chunk& c : chunks) c = Chunk{};
    free_chunks.clear();
    for (std::uint32_t i = 0; i < chunks.size(); ++i) free_chunks.insert(free_chunks.end(), i);
    partial.assign(sizes.size(), {});
    bytes_in_use = blocks_in_use = chunks_in_use = 0;
  }

  // The class of `use`'s table for blocks of `size`, or kNone when it takes a large run.
  std::uint32_t class_for(std::size_t size, BlockUse use) const noexcept {
    const auto first = sizes.begin() + (use == BlockUse::kItem ? 0 : item_class_count);
    const auto last = use == BlockUse::kItem ? sizes.begin() + item_class_count : sizes.end();
    const auto it = std::lower_bound(first, last, std::max<std::size_t>(size, 1));
    return it == last ? kNone : static_cast<std::uint32_t>(it - sizes.begin());
  }
  // The class of `use`'s table whose block size is exactly `block_size`, or kNone.
  std::uint32_t class_of_block(std::uint32_t block_size, BlockUse use) const noexcept {
    const std::uint32_t c = class_for(block_size, use);
    return c != kNone && sizes[c] == block_size ? c : kNone;
  }
  std::uint32_t magic_for(BlockUse use) const noexcept {
    return geometry.header_table && use == BlockUse::kIndex ? kIndexChunkMagic : kChunkMagic;
  }
  std::uint64_t run_bytes(std::uint64_t run) const noexcept {
    return run * chunk_bytes - data_offset;
  }

  std::uint64_t chunk_start(std::uint32_t index) const noexcept {
    return chunks_begin + std::uint64_t{index} * chunk_bytes;
  }
  ChunkHeader* header(std::uint32_t index) const noexcept {
    return region.at<ChunkHeader>(geometry.header_table
                                      ? heap_begin + std::uint64_t{index} * kChunkHeaderBytes
                                      : chunk_start(index));
  }

  // The valid header of chunk `index`, or nullptr.
  const ChunkHeader* valid_header(std::uint32_t index) const noexcept {
    const ChunkHeader* h = header(index);
    if (h->magic != kChunkMagic && (h->magic != kIndexChunkMagic || !geometry.header_table)) {
      return nullptr;
    }
    if (h->checksum != header_checksum(*h)) return nullptr;
    return h;
  }

  void write_header(std::uint32_t index, std::uint32_t block_size, std::uint32_t count,
                    BlockUse use) noexcept {
    ChunkHeader* h = header(index);
    const ChunkHeader wanted{magic_for(use), block_size, count, 0};
    if (const ChunkHeader* old = valid_header(index);
        old != nullptr && old->magic == wanted.magic && old->block_size == block_size &&
        old->chunk_count == count) {
      return;  // this chunk had the same class before; its header is already durable
    }
    std::memcpy(h, &wanted, sizeof(wanted));
    h->checksum = header_checksum(*h);
    region.persist(h, sizeof(*h));
  }

  // Zeroes the headers of a run's chunks, continuation chunks first (see the file comment).
  void invalidate_run(std::uint32_t first, std::uint32_t run) noexcept {
    if (run > 1) {
      for (std::uint32_t i = first + 1; i < first + run; ++i) {
        std::memset(static_cast<void*>(header(i)), 0, sizeof(ChunkHeader));
        region.flush(header(i), sizeof(ChunkHeader));
      }
      region.fence();
    }
    std::memset(static_cast<void*>(header(first)), 0, sizeof(ChunkHeader));
    region.persist(header(first), sizeof(ChunkHeader));
  }

  void add_partial(std::uint32_t index) {
    Chunk& c = chunks[index];
    std::vector<std::uint32_t>& list = partial[c.size_class];
    c.partial_pos = static_cast<std::uint32_t>(list.size());
    list.push_back(index);
  }

  void remove_partial(std::uint32_t index) noexcept {
    Chunk& c = chunks[index];
    std::vector<std::uint32_t>& list = partial[c.size_class];
    const std::uint32_t moved = list.back();
    list[c.partial_pos] = moved;
    chunks[moved].partial_pos = c.partial_pos;
    list.pop_back();
    c.partial_pos = kNone;
  }

  void make_small(std::uint32_t index, std::uint32_t size_class, BlockUse use) {
    Chunk& c = chunks[index];
    c.state = ChunkState::kSmall;
    c.size_class = size_class;
    c.use = use;
    c.used = 0;
    c.free_hint = 0;
    c.bitmap.assign((blocks_per_chunk[size_class] + 63) / 64, 0);
    c.links = std::make_unique<BlockLinks[]>(blocks_per_chunk[size_class]);
  }

  void make_large(std::uint32_t index, std::uint32_t run, BlockUse use) {
    Chunk& c = chunks[index];
    c.state = ChunkState::kLarge;
    c.run = run;
    c.use = use;
    c.links = std::make_unique<BlockLinks[]>(1);
  }

  void release_chunks(std::uint32_t first, std::uint32_t run) {
    for (std::uint32_t i = first; i < first + run; ++i) {
      chunks[i] = Chunk{};
      free_chunks.insert(i);
    }
  }

  std::uint64_t allocate_small(std::uint32_t size_class, BlockUse use) {
    if (partial[size_class].empty()) {
      if (free_chunks.empty()) return 0;
      const std::uint32_t index = *free_chunks.begin();
      if (!grow_to(index + 1)) return 0;
      free_chunks.erase(free_chunks.begin());
      write_header(index, sizes[size_class], 1, use);
      make_small(index, size_class, use);
      add_partial(index);
      ++chunks_in_use;
    }
    const std::uint32_t index = partial[size_class].back();
    Chunk& c = chunks[index];
    std::uint32_t block = 0;
    // A 1 MiB page of small blocks has a long bitmap: start at the first word that may have a
    // free block rather than at word 0.
    for (std::size_t w = c.free_hint; w < c.bitmap.size(); ++w) {
      if (c.bitmap[w] != ~std::uint64_t{0}) {
        block = static_cast<std::uint32_t>(w * 64 + std::countr_one(c.bitmap[w]));
        c.bitmap[w] |= std::uint64_t{1} << (block % 64);
        c.free_hint = static_cast<std::uint32_t>(w);
        break;
      }
    }
    if (++c.used == blocks_per_chunk[size_class]) remove_partial(index);
    c.stamp = ++tick;
    bytes_in_use += sizes[size_class];
    ++blocks_in_use;
    return chunk_start(index) + data_offset + std::uint64_t{block} * sizes[size_class];
  }

  std::uint64_t allocate_large(std::size_t size, BlockUse use) {
    if (size > heap_bytes) return 0;  // also keeps the arithmetic below from overflowing
    const std::uint64_t run64 = (std::uint64_t{size} + data_offset + chunk_bytes - 1) / chunk_bytes;
    const std::uint64_t usable = run_bytes(run64);
    if (usable > std::numeric_limits<std::uint32_t>::max() || run64 > chunks.size()) return 0;
    const auto run = static_cast<std::uint32_t>(run64);
    // First fit: the lowest run of `run` consecutive free chunks.
    std::uint32_t start = 0;
    std::uint32_t length = 0;
    for (std::uint32_t index : free_chunks) {
      if (length > 0 && index == start + length) {
        ++length;
      } else {
        start = index;
        length = 1;
      }
      if (length == run) break;
    }
    if (length < run || !grow_to(start + run)) return 0;
    write_header(start, static_cast<std::uint32_t>(usable), run, use);
    for (std::uint32_t i = start; i < start + run; ++i) {
      free_chunks.erase(i);
      if (i != start) chunks[i].state = ChunkState::kContinuation;
    }
    make_large(start, run, use);
    chunks[start].used = 1;
    chunks[start].stamp = ++tick;
    chunks_in_use += run;
    bytes_in_use += usable;
    ++blocks_in_use;
    return chunk_start(start) + data_offset;
  }

  // Locates the block at `offset`: its chunk and, for a small chunk, its index. False if
  // `offset` is not the start of a block of an assigned chunk.
  bool locate(std::uint64_t offset, std::uint32_t& index, std::uint32_t& block) const noexcept {
    if (offset < chunks_begin + data_offset) return false;
    const std::uint64_t rel = offset - chunks_begin;
    if (rel / chunk_bytes >= chunks.size()) return false;
    index = static_cast<std::uint32_t>(rel / chunk_bytes);
    const std::uint64_t in_chunk = rel % chunk_bytes;
    const Chunk& c = chunks[index];
    if (c.state == ChunkState::kLarge) {
      block = 0;
      return in_chunk == data_offset;
    }
    if (c.state != ChunkState::kSmall || in_chunk < data_offset) return false;
    const std::uint64_t size = sizes[c.size_class];
    if ((in_chunk - data_offset) % size != 0) return false;
    block = static_cast<std::uint32_t>((in_chunk - data_offset) / size);
    return block < blocks_per_chunk[c.size_class];
  }

  bool in_use(std::uint32_t index, std::uint32_t block) const noexcept {
    const Chunk& c = chunks[index];
    if (c.state == ChunkState::kLarge) return c.used != 0;
    return (c.bitmap[block / 64] >> (block % 64) & 1) != 0;
  }

  std::uint64_t block_bytes(std::uint32_t index) const noexcept {
    const Chunk& c = chunks[index];
    if (c.state == ChunkState::kLarge) return run_bytes(c.run);
    return sizes[c.size_class];
  }

  void mark(std::uint32_t index, std::uint32_t block) noexcept {
    Chunk& c = chunks[index];
    if (c.state == ChunkState::kLarge) {
      c.used = 1;
    } else {
      c.bitmap[block / 64] |= std::uint64_t{1} << (block % 64);
      ++c.used;
    }
    bytes_in_use += block_bytes(index);
    ++blocks_in_use;
  }

  void free_block(std::uint32_t index, std::uint32_t block) {
    Chunk& c = chunks[index];
    bytes_in_use -= block_bytes(index);
    --blocks_in_use;
    if (c.state == ChunkState::kLarge) {
      const std::uint32_t run = c.run;
      invalidate_run(index, run);
      release_chunks(index, run);
      chunks_in_use -= run;
      return;
    }
    c.bitmap[block / 64] &= ~(std::uint64_t{1} << (block % 64));
    c.free_hint = std::min(c.free_hint, block / 64);
    const bool was_full = c.used == blocks_per_chunk[c.size_class];
    --c.used;
    if (c.used == 0) {
      if (!was_full) remove_partial(index);
      release_chunks(index, 1);
      --chunks_in_use;
    } else if (was_full) {
      add_partial(index);
    }
  }

  // Classifies chunk `index` from its persistent header; returns the chunks it covers.
  std::uint32_t read_header(std::uint32_t index) {
    const ChunkHeader* h = valid_header(index);
    if (h == nullptr) return 1;
    const BlockUse use = h->magic == kIndexChunkMagic ? BlockUse::kIndex : BlockUse::kItem;
    if (h->chunk_count == 1) {
      const std::uint32_t size_class = class_of_block(h->block_size, use);
      if (size_class != kNone) {
        make_small(index, size_class, use);
        free_chunks.erase(index);
        return 1;
      }
    }
    const std::uint64_t run = h->chunk_count;
    if (run == 0 || index + run > chunks.size() || h->block_size != run_bytes(run)) {
      return 1;  // not a header this allocator writes: the chunk is free
    }
    make_large(index, static_cast<std::uint32_t>(run), use);
    for (std::uint32_t i = index; i < index + run; ++i) {
      if (i != index) chunks[i].state = ChunkState::kContinuation;
      free_chunks.erase(i);
    }
    return static_cast<std::uint32_t>(run);
  }
};

Allocator::Allocator(PmRegion& region, std::uint64_t heap_begin, std::uint64_t heap_end,
                     HeapGeometry geometry)
    : impl_(std::make_unique<Impl>(region, heap_begin, heap_end, std::move(geometry))) {}

Allocator::Allocator(Pool& pool)
    : impl_(std::make_unique<Impl>(pool.region(), pool.heap_begin(), pool.heap_end(),
                                   pool.heap_geometry())) {
  impl_->pool = &pool;
  if (pool.has_chunk_high_water()) {
    impl_->high_water_field = pool.chunk_high_water_field();
    const std::uint64_t mark =
        std::atomic_ref<std::uint64_t>(*impl_->high_water_field).load(std::memory_order_acquire);
    impl_->high_water =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(mark, impl_->high_water));
  }
}

Allocator::~Allocator() = default;

std::uint64_t Allocator::allocate(std::size_t size, BlockUse use) noexcept {
  std::lock_guard lock(impl_->mutex);
  const std::uint32_t size_class = impl_->class_for(size, use);
  if (size_class != kNone) return impl_->allocate_small(size_class, use);
  return impl_->allocate_large(size, use);
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> Allocator::evacuation_candidates(
    std::size_t size, std::size_t count) const {
  std::lock_guard lock(impl_->mutex);
  const std::uint32_t wanted = impl_->class_for(size, BlockUse::kItem);  // kNone: a large run
  std::vector<std::pair<std::uint64_t, std::uint32_t>> ranked;  // (newest allocation, chunk)
  for (std::uint32_t i = 0; i < impl_->chunks.size(); ++i) {
    const Chunk& c = impl_->chunks[i];
    const bool candidate =
        c.use == BlockUse::kItem && ((c.state == ChunkState::kSmall && c.size_class != wanted) ||
                                     c.state == ChunkState::kLarge);
    if (candidate && c.used > 0) ranked.emplace_back(c.stamp, i);
  }
  const std::size_t n = std::min(count, ranked.size());
  std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(n), ranked.end());
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint32_t index = ranked[k].second;
    const Chunk& c = impl_->chunks[index];
    const std::uint32_t run = c.state == ChunkState::kLarge ? c.run : 1;
    out.emplace_back(impl_->chunk_start(index),
                     impl_->chunk_start(index) + std::uint64_t{run} * impl_->chunk_bytes);
  }
  return out;
}

std::size_t Allocator::size_class(std::size_t size) const noexcept {
  // The class tables are immutable after construction: no lock needed.
  const std::uint32_t size_class = impl_->class_for(size, BlockUse::kItem);
  return size_class == kNone ? impl_->item_class_count : size_class;
}

std::size_t Allocator::class_count() const noexcept { return impl_->item_class_count + 1; }

BlockLinks& Allocator::links(std::uint64_t offset) const noexcept {
  // The caller owns the block, so its chunk keeps its class and links array meanwhile; those
  // were set before the block was handed out, under the mutex the caller's allocate() took.
  const std::uint64_t rel = offset - impl_->chunks_begin;
  const Chunk& c = impl_->chunks[rel / impl_->chunk_bytes];
  if (c.state == ChunkState::kLarge) return c.links[0];
  return c.links[(rel % impl_->chunk_bytes - impl_->data_offset) / impl_->sizes[c.size_class]];
}

std::size_t Allocator::rounded_size(std::size_t size, BlockUse use) const noexcept {
  const std::uint32_t size_class = impl_->class_for(size, use);
  if (size_class != kNone) return impl_->sizes[size_class];
  const std::uint64_t chunk = impl_->chunk_bytes;
  return impl_->run_bytes((size + impl_->data_offset + chunk - 1) / chunk);
}

void Allocator::free(std::uint64_t offset) noexcept {
  std::lock_guard lock(impl_->mutex);
  std::uint32_t index = 0;
  std::uint32_t block = 0;
  if (!impl_->locate(offset, index, block) || !impl_->in_use(index, block)) return;
  impl_->free_block(index, block);
}

std::size_t Allocator::block_size(std::uint64_t offset) const noexcept {
  std::lock_guard lock(impl_->mutex);
  std::uint32_t index = 0;
  std::uint32_t block = 0;
  if (!impl_->locate(offset, index, block)) return 0;
  return impl_->block_bytes(index);
}

void Allocator::begin_rebuild() {
  std::lock_guard lock(impl_->mutex);
  impl_->reset();
  // Below the mark only: chunks above it have no header (a full scan without a trusted mark).
  const std::uint32_t count = impl_->high_water;
  impl_->headers_end = 0;
  for (std::uint32_t index = 0; index < count;) {
    const std::uint32_t covered = impl_->read_header(index);
    if (impl_->chunks[index].state != ChunkState::kFree) impl_->headers_end = index + covered;
    index += covered;
  }
}

bool Allocator::mark_reachable(std::uint64_t offset, BlockUse use) noexcept {
  std::lock_guard lock(impl_->mutex);
  std::uint32_t index = 0;
  std::uint32_t block = 0;
  if (!impl_->locate(offset, index, block) || impl_->in_use(index, block)) return false;
  // A chunk's first marked block decides its use (a layout-1 pool's headers do not say it, and
  // a pool from before BlockUse may mix them): its class moves to that use's table.
  Chunk& c = impl_->chunks[index];
  if (c.used == 0 && c.use != use) {
    if (c.state == ChunkState::kSmall) {
      const std::uint32_t size_class = impl_->class_of_block(impl_->sizes[c.size_class], use);
      if (size_class == kNone) return false;
      c.size_class = size_class;
    }
    c.use = use;
  }
  impl_->mark(index, block);
  return true;
}

void Allocator::finish_rebuild() {
  std::lock_guard lock(impl_->mutex);
  Impl& m = *impl_;
  const auto count = static_cast<std::uint32_t>(m.chunks.size());
  for (std::uint32_t index = 0; index < count; ++index) {
    Chunk& c = m.chunks[index];
    if (c.state == ChunkState::kSmall) {
      if (c.used == 0) {
        m.release_chunks(index, 1);
        continue;
      }
      ++m.chunks_in_use;
      if (c.used < m.blocks_per_chunk[c.size_class]) m.add_partial(index);
    } else if (c.state == ChunkState::kLarge) {
      const std::uint32_t run = c.run;
      if (c.used == 0) {
        m.invalidate_run(index, run);
        m.release_chunks(index, run);
      } else {
        m.chunks_in_use += run;
      }
      index += run - 1;
    }
  }
  // A layout 1 pool: the full scan found every header, so its end is a valid mark. Persisted
  // before the pool says it has one (upgrade_layout), and trusted from now on.
  if (m.pool != nullptr && m.high_water_field == nullptr) {
    m.high_water_field = m.pool->chunk_high_water_field();
    m.high_water = m.headers_end;
    m.region.store_u64_persist(m.high_water_field, m.high_water);
    m.pool->upgrade_layout();
  }
}

AllocatorStats Allocator::stats() const noexcept {
  std::lock_guard lock(impl_->mutex);
  AllocatorStats s;
  s.heap_bytes = impl_->heap_bytes;
  s.bytes_in_use = impl_->bytes_in_use;
  s.blocks_in_use = impl_->blocks_in_use;
  s.chunks_in_use = impl_->chunks_in_use;
  s.chunks_total = impl_->chunks.size();
  s.chunks_high_water = impl_->high_water;
  return s;
}

std::vector<ClassUsage> Allocator::item_class_usage() const {
  std::lock_guard lock(impl_->mutex);
  const Impl& m = *impl_;
  std::vector<ClassUsage> out(m.item_class_count + 1);
  for (std::uint32_t c = 0; c < m.item_class_count; ++c) {
    out[c].block_size = m.sizes[c];
    out[c].blocks_per_chunk = m.blocks_per_chunk[c];
  }
  ClassUsage& large = out.back();
  large.block_size = static_cast<std::uint32_t>(m.chunk_bytes);
  large.blocks_per_chunk = 1;
  for (const Chunk& c : m.chunks) {
    if (c.use != BlockUse::kItem) continue;
    if (c.state == ChunkState::kSmall) {
      ++out[c.size_class].chunks;
      out[c.size_class].blocks_in_use += c.used;
    } else if (c.state == ChunkState::kLarge) {
      large.chunks += c.run;
      large.blocks_in_use += c.used;
    }
  }
  return out;
}

const HeapGeometry& Allocator::geometry() const noexcept { return impl_->geometry; }

}  // namespace pmcached::pm

// DoubleWriteBuffer: the ring of page images in the pool, its write protocol and repair().
//
// Bytes (layout version 1), all little-endian:
//   root block, 64 bytes: char magic[8] "PMDBLWRT", u32 version, u32 slots, u32 page_size,
//     u32 reserved (0), u64 region_offset, u64 page_file_id, u64 seed, u64 checksum (XXH64 of
//     the 48 bytes before it), u64 reserved (0). Written once, at creation.
//   region: `slots` slots of 64 + page_size bytes; a slot is a header {u64 page id, u64 LSN (the
//     image's own PageHeader LSN), u64 checksum (XXH3-64, seeded with the root's seed, of the
//     page bytes, combined with id and LSN), 40 bytes reserved} and the page image.
// A slot never written, half persisted, or left by another buffer (the seed differs) fails the
// checksum and is ignored.

#include "engine/buffer/double_write.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>

#include <xxhash.h>

#include "engine/buffer/aligned_buffer.h"
#include "engine/buffer/page_checksum.h"
#include "engine/buffer/pool_blocks.h"
#include "engine/pm/allocator.h"
#include "engine/pm/persistence.h"
#include "engine/pm/pool.h"

namespace pmcached::buffer {
namespace {

constexpr char kMagic[8] = {'P', 'M', 'D', 'B', 'L', 'W', 'R', 'T'};
constexpr std::uint32_t kLayoutVersion = 1;

struct RootBlock {
  char magic[8];
  std::uint32_t version;
  std::uint32_t slots;
  std::uint32_t page_size;
  std::uint32_t reserved0;
  std::uint64_t region_offset;
  std::uint64_t page_file_id;
  std::uint64_t seed;
  std::uint64_t checksum;  // XXH64 of the bytes before it
  std::uint64_t reserved1;
};
static_assert(sizeof(RootBlock) == 64);
static_assert(offsetof(RootBlock, checksum) == 48);

struct SlotHeader {
  std::uint64_t page_id;
  std::uint64_t lsn;
  std::uint64_t checksum;
  std::uint64_t reserved[5];
};
static_assert(sizeof(SlotHeader) == 64);

std::uint64_t root_checksum(const RootBlock& root) noexcept {
  return XXH64(&root, offsetof(RootBlock, checksum), 0);
}

std::uint64_t image_checksum(PageId id, Lsn lsn, const std::byte* page, std::size_t size,
                             std::uint64_t seed) noexcept {
  const std::uint64_t fields[3] = {id, lsn, XXH3_64bits_withSeed(page, size, seed)};
  return XXH3_64bits_withSeed(fields, sizeof fields, seed);
}

std::size_t slot_stride(std::size_t page_size) noexcept { return sizeof(SlotHeader) + page_size; }

std::uint64_t new_seed() {
  std::random_device device;
  const auto now =
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return (std::uint64_t{device()} << 32 | device()) ^ now;
}

[[noreturn]] void refuse(std::uint64_t root_offset, const std::string& why) {
  throw std::runtime_error("double-write buffer at pool offset " + std::to_string(root_offset) +
                           ": " + why);
}

}  // namespace

DoubleWriteBuffer::DoubleWriteBuffer(pm::PmRegion& region, std::uint64_t root_offset,
                                     std::uint64_t region_offset, std::uint32_t slots,
                                     std::uint64_t seed, PageFile& file)
    : region_(region),
      root_offset_(root_offset),
      region_offset_(region_offset),
      slots_(slots),
      seed_(seed),
      file_(file),
      page_size_(file.page_size()) {}

DoubleWriteBuffer::~DoubleWriteBuffer() = default;

std::unique_ptr<DoubleWriteBuffer> DoubleWriteBuffer::create(pm::Pool& pool,
                                                             pm::Allocator& allocator,
                                                             PageFile& file) {
  const std::size_t page_size = file.page_size();
  const auto slots = static_cast<std::uint32_t>(std::max(kDoubleWriteBytes / page_size, kMinSlots));
  const std::uint64_t bytes = std::uint64_t{slots} * slot_stride(page_size);
  const std::optional<PoolBlocks> blocks =
      allocate_root_and_region(allocator, sizeof(RootBlock), bytes);
  if (!blocks) {
    throw std::runtime_error("double-write buffer: no room in the pool for " +
                             std::to_string(bytes) + " bytes");
  }
  const std::uint64_t root_at = blocks->root;
  const std::uint64_t region_at = blocks->region;
  RootBlock root{};
  std::memcpy(root.magic, kMagic, sizeof kMagic);
  root.version = kLayoutVersion;
  root.slots = slots;
  root.page_size = static_cast<std::uint32_t>(page_size);
  root.region_offset = region_at;
  root.page_file_id = file.file_id();
  root.seed = new_seed();
  root.checksum = root_checksum(root);
  pm::PmRegion& region = pool.region();
  {
    pm::OpScope scope(pm::OpKind::kLog);
    std::memcpy(region.at<char>(root_at), &root, sizeof root);
    region.persist(region.at<char>(root_at), sizeof root);
  }
  return std::unique_ptr<DoubleWriteBuffer>(
      new DoubleWriteBuffer(region, root_at, region_at, slots, root.seed, file));
}

std::unique_ptr<DoubleWriteBuffer> DoubleWriteBuffer::open(pm::Pool& pool,
                                                           std::uint64_t root_offset,
                                                           PageFile& file) {
  if (root_offset == 0) refuse(root_offset, "none was made (the redo log names no buffer)");
  if (root_offset < pool.heap_begin() || root_offset % alignof(RootBlock) != 0 ||
      root_offset > pool.heap_end() - sizeof(RootBlock)) {
    refuse(root_offset, "the root lies outside the pool's heap");
  }
  RootBlock root;
  std::memcpy(&root, pool.region().at<char>(root_offset), sizeof root);
  if (std::memcmp(root.magic, kMagic, sizeof kMagic) != 0) refuse(root_offset, "bad magic");
  if (root.version != kLayoutVersion) {
    refuse(root_offset, "layout version " + std::to_string(root.version) + ", this build reads " +
                            std::to_string(kLayoutVersion));
  }
  if (root.checksum != root_checksum(root)) refuse(root_offset, "corrupt root (checksum)");
  const std::uint64_t bytes = std::uint64_t{root.slots} * slot_stride(root.page_size);
  if (root.slots == 0 || root.region_offset < pool.heap_begin() ||
      root.region_offset % pm::kCacheLine != 0 || root.region_offset > pool.heap_end() ||
      bytes > pool.heap_end() - root.region_offset) {
    refuse(root_offset, "corrupt root (its region lies outside the pool's heap)");
  }
  if (root.page_file_id != file.file_id()) {
    refuse(root_offset, "it belongs to page file " + std::to_string(root.page_file_id) +
                            ", not to page file " + std::to_string(file.file_id()));
  }
  if (root.page_size != file.page_size()) {
    refuse(root_offset, "it holds pages of " + std::to_string(root.page_size) +
                            " bytes, the page file has pages of " +
                            std::to_string(file.page_size()));
  }
  return std::unique_ptr<DoubleWriteBuffer>(new DoubleWriteBuffer(
      pool.region(), root_offset, root.region_offset, root.slots, root.seed, file));
}

void DoubleWriteBuffer::for_each_block(
    const std::function<void(std::uint64_t offset)>& visit) const {
  visit(root_offset_);
  visit(region_offset_);
}

std::byte* DoubleWriteBuffer::slot(std::uint32_t i) const noexcept {
  return region_.at<std::byte>(region_offset_ + std::uint64_t{i} * slot_stride(page_size_));
}

std::uint32_t DoubleWriteBuffer::take_slot() {
  std::unique_lock lock(mutex_);
  while (used_ == slots_) {
    // Every slot was used since the last fdatasync: once the writes made from them are in the
    // file, one fdatasync makes them durable and the slots free. A thread that waited meanwhile
    // finds the ring started again by another.
    if (in_flight_ != 0) {
      idle_.wait(lock);
      continue;
    }
    file_.sync();
    ++syncs_;
    used_ = 0;
  }
  ++in_flight_;
  ++writes_;
  return used_++;
}

void DoubleWriteBuffer::persist_image(std::byte* at, PageId id, const std::byte* page) noexcept {
  SlotHeader header{};
  header.page_id = id;
  header.lsn = reinterpret_cast<const PageHeader*>(page)->lsn;
  header.checksum = image_checksum(id, header.lsn, page, page_size_, seed_);
  pm::OpScope scope(pm::OpKind::kLog);
  std::memcpy(at + sizeof header, page, page_size_);
  std::memcpy(at, &header, sizeof header);
  region_.persist(at, slot_stride(page_size_));
}

void DoubleWriteBuffer::write(PageId id, const std::byte* page) {
  const std::uint32_t i = take_slot();
  struct Done {
    DoubleWriteBuffer& buffer;
    ~Done() {
      std::lock_guard lock(buffer.mutex_);
      if (--buffer.in_flight_ == 0) buffer.idle_.notify_all();
    }
  } done{*this};
  persist_image(slot(i), id, page);
  file_.write(id, page);
}

std::size_t DoubleWriteBuffer::repair() {
  struct Image {
    Lsn lsn;
    std::uint32_t slot;
  };
  std::map<PageId, Image> newest;  // the newest intact image of each page
  for (std::uint32_t i = 0; i < slots_; ++i) {
    SlotHeader header;
    std::memcpy(&header, slot(i), sizeof header);
    if (header.page_id == kNoPage || header.page_id >= file_.page_count()) continue;
    if (header.checksum !=
        image_checksum(header.page_id, header.lsn, slot(i) + sizeof header, page_size_, seed_)) {
      continue;
    }
    auto [it, fresh] = newest.try_emplace(header.page_id, Image{header.lsn, i});
    if (!fresh && header.lsn >= it->second.lsn) it->second = Image{header.lsn, i};
  }
  std::size_t repaired = 0;
  AlignedBuffer on_file(page_size_);
  for (const auto& [id, image] : newest) {
    file_.read(id, on_file.data());
    const auto& header = *reinterpret_cast<const PageHeader*>(on_file.data());
    // A page of zeros was never written (its first write is the one that did not land).
    const bool written = !all_zero(on_file.data(), page_size_);
    const bool intact = header.checksum == page_checksum(on_file.data(), page_size_);
    if (written && intact && header.lsn >= image.lsn) continue;
    std::memcpy(on_file.data(), slot(image.slot) + sizeof(SlotHeader), page_size_);
    file_.write(id, on_file.data());
    ++repaired;
  }
  // Always: the ring starts again at slot 0, over the images of the last process's writes,
  // which may still sit in the page cache after a crash of the process alone (not of the
  // machine). They must be durable before a slot that could repair them is overwritten.
  file_.sync();
  pages_repaired_ = repaired;
  return repaired;
}

DoubleWriteStats DoubleWriteBuffer::stats() const noexcept {
  DoubleWriteStats s;
  s.slots = slots_;
  {
    std::lock_guard lock(mutex_);
    s.writes = writes_;
    s.syncs = syncs_;
  }
  s.pages_repaired = pages_repaired_;
  return s;
}

}  // namespace pmcached::buffer

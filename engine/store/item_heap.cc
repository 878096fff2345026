#include "engine/store/item_heap.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include <xxhash.h>

#include "engine/pm/allocator.h"
#include "engine/pm/pm_region.h"
#include "engine/pm/pool.h"

namespace pmcached::engine {

std::uint32_t item_checksum(const ItemHeader& item) noexcept {
  // The sizes and client flags seed the hash of the key and value bytes.
  unsigned char fixed[9];
  std::memcpy(fixed, &item.value_size, 4);
  fixed[4] = item.key_size;
  std::memcpy(fixed + 5, &item.client_flags, 4);
  const std::uint32_t seed = XXH32(fixed, sizeof fixed, 0x9e3779b1u);
  return XXH32(item.key_data(), item.key_size + std::size_t{item.value_size}, seed);
}

ItemHeader* ItemHeap::allocate_item(std::string_view key, std::size_t value_size,
                                    std::uint32_t client_flags) noexcept {
  ItemHeader* item = allocate(memcached_item_size(key.size(), value_size, client_flags));
  if (item == nullptr) return nullptr;
  new (item) ItemHeader{};
  item->key_size = static_cast<std::uint8_t>(key.size());
  item->value_size = static_cast<std::uint32_t>(value_size);
  item->client_flags = client_flags;
  std::memcpy(item->key_data(), key.data(), key.size());
  return item;
}

namespace {

// Records in an anonymous mapping, in blocks of the same allocator and size classes as a pool's
// heap (no flushes: PmRegion::anonymous). ItemRef = address, so item() costs nothing.
class DramHeap final : public ItemHeap {
 public:
  DramHeap(std::size_t bytes, const pm::SlabSettings& slabs)
      : region_(pm::PmRegion::anonymous(
            mapping_bytes(bytes, slabs.page_size, pm::slab_class_sizes(slabs).size() + 1))),
        allocator_(*region_, kHeapBegin, region_->size(), pm::HeapGeometry::slabs(slabs)) {}

  ItemHeader* allocate(std::size_t size) noexcept override {
    const std::uint64_t offset = allocator_.allocate(size);
    return offset == 0 ? nullptr : region_->at<ItemHeader>(offset);
  }
  void free(ItemHeader* item) noexcept override {
    if (item != nullptr) allocator_.free(region_->offset_of(item));
  }
  pm::BlockLinks& links(ItemRef ref) const noexcept override {
    return allocator_.links(offset_of(ref));
  }
  ItemRef ref_of(const ItemHeader* item) const noexcept override {
    return reinterpret_cast<ItemRef>(item);
  }
  ItemHeader* item(ItemRef ref) const noexcept override {
    return reinterpret_cast<ItemHeader*>(ref);
  }
  void persist(const void*, std::size_t) noexcept override {}
  void flush_before_publish(const void*, std::size_t) noexcept override {}
  bool plausible(ItemRef ref) const noexcept override { return ref != kNoItem; }
  std::vector<std::pair<ItemRef, ItemRef>> evacuation_ranges(std::size_t size,
                                                             std::size_t count) const override {
    auto ranges = allocator_.evacuation_candidates(size, count);
    const auto base = reinterpret_cast<ItemRef>(region_->base());
    for (auto& [begin, end] : ranges) {
      begin += base;
      end += base;
    }
    return ranges;
  }
  std::size_t footprint(std::size_t size) const noexcept override {
    return allocator_.rounded_size(size);
  }
  std::size_t class_count() const noexcept override { return allocator_.class_count(); }
  std::size_t size_class(std::size_t size) const noexcept override {
    return allocator_.size_class(size);
  }
  std::vector<pm::ClassUsage> class_usage() const override { return allocator_.item_class_usage(); }
  std::size_t page_size() const noexcept override { return allocator_.geometry().chunk_size; }

 private:
  static constexpr std::uint64_t kHeapBegin = 4096;  // offset 0 is "no block"

  // The mapping for `bytes` of pages with the allocator's header table, and one page more per
  // class: like memcached, which lets a class have its first page even past the memory limit,
  // so that a small -m still serves every class (the store's limit still bounds the blocks in
  // use; pages never touched cost no memory).
  static std::size_t mapping_bytes(std::size_t bytes, std::size_t page,
                                   std::size_t classes) noexcept {
    const std::size_t pages = (bytes + page - 1) / page + classes;
    const std::size_t table = (pages * pm::kChunkHeaderBytes + 4095) / 4096 * 4096;
    return kHeapBegin + table + pages * page;
  }
  std::uint64_t offset_of(ItemRef ref) const noexcept {
    return ref - reinterpret_cast<ItemRef>(region_->base());
  }

  std::unique_ptr<pm::PmRegion> region_;
  mutable pm::Allocator allocator_;
};

class PmHeap final : public ItemHeap {
 public:
  PmHeap(pm::Pool& pool, pm::Allocator& allocator) : pool_(pool), allocator_(allocator) {}

  ItemHeader* allocate(std::size_t size) noexcept override {
    const std::uint64_t offset = allocator_.allocate(size);
    return offset == 0 ? nullptr : pool_.region().at<ItemHeader>(offset);
  }
  void free(ItemHeader* item) noexcept override { allocator_.free(pool_.region().offset_of(item)); }
  ItemRef ref_of(const ItemHeader* item) const noexcept override {
    return pool_.region().offset_of(item);
  }
  ItemHeader* item(ItemRef ref) const noexcept override {
    return pool_.region().at<ItemHeader>(ref);
  }
  void persist(const void* addr, std::size_t len) noexcept override {
    pool_.region().persist(addr, len);
  }
  void flush(const void* addr, std::size_t len) noexcept override {
    pool_.region().flush(addr, len);
  }
  void fence() noexcept override { pool_.region().fence(); }
  void flush_before_publish(const void* addr, std::size_t len) noexcept override {
    pool_.region().flush_before_publish(addr, len);
  }
  void finish_publish() noexcept override { pool_.region().fence_deferred(); }
  pm::Pool* pool() const noexcept override { return &pool_; }
  pm::Allocator* allocator() const noexcept override { return &allocator_; }
  std::vector<std::pair<ItemRef, ItemRef>> evacuation_ranges(std::size_t record_size,
                                                             std::size_t count) const override {
    return allocator_.evacuation_candidates(record_size, count);
  }
  std::size_t footprint(std::size_t record_size) const noexcept override {
    return allocator_.rounded_size(record_size);
  }
  std::size_t class_count() const noexcept override { return allocator_.class_count(); }
  std::size_t size_class(std::size_t record_size) const noexcept override {
    return allocator_.size_class(record_size);
  }
  pm::BlockLinks& links(ItemRef ref) const noexcept override { return allocator_.links(ref); }
  std::vector<pm::ClassUsage> class_usage() const override { return allocator_.item_class_usage(); }
  std::size_t page_size() const noexcept override { return allocator_.geometry().chunk_size; }

  bool plausible(ItemRef ref) const noexcept override {
    const std::uint64_t size = pool_.region().size();
    if (ref < pool_.heap_begin() || ref % 8 != 0 || ref > size - sizeof(ItemHeader)) return false;
    return item(ref)->record_size() <= size - ref;
  }

 private:
  pm::Pool& pool_;
  pm::Allocator& allocator_;
};

}  // namespace

std::unique_ptr<ItemHeap> make_dram_heap(std::size_t bytes, const pm::SlabSettings& slabs) {
  return std::make_unique<DramHeap>(bytes, slabs);
}

std::unique_ptr<ItemHeap> make_pm_heap(pm::Pool& pool, pm::Allocator& allocator) {
  return std::make_unique<PmHeap>(pool, allocator);
}

}  // namespace pmcached::engine

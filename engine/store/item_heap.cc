#include "engine/store/item_heap.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include <xxhash.h>

#include "engine/pm/allocator.h"
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

ItemHeader* ItemHeap::allocate_item(std::string_view key, std::size_t value_size) noexcept {
  ItemHeader* item = allocate(item_record_size(key.size(), value_size));
  if (item == nullptr) return nullptr;
  new (item) ItemHeader{};
  item->key_size = static_cast<std::uint8_t>(key.size());
  item->value_size = static_cast<std::uint32_t>(value_size);
  std::memcpy(item->key_data(), key.data(), key.size());
  return item;
}

namespace {

// Each record is preceded by its links in the same allocation.
class DramHeap final : public ItemHeap {
 public:
  ItemHeader* allocate(std::size_t size) noexcept override {
    void* block = std::malloc(kLinksSize + size);
    if (block == nullptr) return nullptr;
    new (block) pm::BlockLinks{};
    return reinterpret_cast<ItemHeader*>(static_cast<char*>(block) + kLinksSize);
  }
  void free(ItemHeader* item) noexcept override {
    if (item != nullptr) std::free(reinterpret_cast<char*>(item) - kLinksSize);
  }
  pm::BlockLinks& links(ItemRef ref) const noexcept override {
    return *reinterpret_cast<pm::BlockLinks*>(reinterpret_cast<char*>(ref) - kLinksSize);
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

 private:
  static constexpr std::size_t kLinksSize = sizeof(pm::BlockLinks);
  static_assert(kLinksSize % alignof(ItemHeader) == 0);
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

std::unique_ptr<ItemHeap> make_dram_heap() { return std::make_unique<DramHeap>(); }

std::unique_ptr<ItemHeap> make_pm_heap(pm::Pool& pool, pm::Allocator& allocator) {
  return std::make_unique<PmHeap>(pool, allocator);
}

}  // namespace pmcached::engine

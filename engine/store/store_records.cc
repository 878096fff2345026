// Store::Impl: the seam between the store and where records live (store_impl.h). With an index
// engine the records are in the item heap and the engine maps keys to them; with a record engine
// (a paged engine) the engine owns them, the store reads copies into per-thread buffers and hands
// it whole new records. Everything else in the store is the same for both.
#include <cstddef>
#include <cstring>
#include <new>

#include "engine/pm/fault_injection.h"
#include "engine/pm/persistence.h"
#include "engine/store/store_impl.h"

namespace pmcached::engine {
namespace {

// A record engine's copies. Two per thread: an operation may hold the key's current record
// (looked up) while it builds the new one.
RecordBuffer& looked_up() {
  thread_local RecordBuffer buffer;
  return buffer;
}
RecordBuffer& built() {
  thread_local RecordBuffer buffer;
  return buffer;
}

std::span<const std::byte> bytes_of(const ItemHeader& item) noexcept {
  return {reinterpret_cast<const std::byte*>(&item), item.record_size()};
}

}  // namespace

ItemHeader* Store::Impl::lookup_record(std::string_view key) noexcept {
  if (!records) {
    const ItemRef ref = engine->lookup(key);
    return ref == kNoItem ? nullptr : heap.item(ref);
  }
  RecordBuffer& buffer = looked_up();
  try {
    if (!records->read(key, buffer)) return nullptr;
  } catch (const std::exception&) {
    return nullptr;  // an I/O error reading a page: the engine counts and logs it
  }
  auto* item = reinterpret_cast<ItemHeader*>(buffer.data());
  // A record that does not hold together is not served (the engine checksums its pages, so this
  // is a store bug or a foreign record, never a torn write).
  if (buffer.size() < sizeof(ItemHeader) || buffer.size() != item->record_size() ||
      item->key() != key) {
    return nullptr;
  }
  return item;
}

ItemHeader* Store::Impl::lookup_header(std::string_view key) noexcept {
  if (!records) return lookup_record(key);
  RecordBuffer& buffer = looked_up();
  try {
    if (!records->read_head(key, sizeof(ItemHeader), buffer)) return nullptr;
  } catch (const std::exception&) {
    return nullptr;  // as in lookup_record()
  }
  auto* item = reinterpret_cast<ItemHeader*>(buffer.data());
  if (buffer.size() != sizeof(ItemHeader) || item->key_size != key.size()) return nullptr;
  return item;
}

void Store::Impl::erase_record(std::string_view key, ItemHeader* item) noexcept {
  if (records) {
    try {
      (void)records->erase(key);
    } catch (const std::exception&) {
      // The engine logs the failure; the key stays.
    }
    return;
  }
  (void)engine->erase(key);
  recency.remove(heap.ref_of(item));
  heap.free(item);
}

bool Store::Impl::publish_record(ItemHeader* fresh, ItemHeader* old, ItemHeader*& previous,
                                 Stripe& stripe) noexcept {
  if (records) {
    WriteStatus status = WriteStatus::kFull;
    try {
      status = records->write(fresh->key(), bytes_of(*fresh));
    } catch (const std::exception&) {
      return false;  // an I/O error: answered as out of memory, nothing acknowledged
    }
    if (status == WriteStatus::kFull) return false;
    previous = status == WriteStatus::kReplaced ? old : nullptr;
    return true;
  }
  // Durability order: the whole record reaches persistence before the index's reference to it
  // can. It is written back with the index's first fence (ItemHeap::flush_before_publish).
  if (!pm::FaultInjection::active(pm::Fault::kSkipRecordPersist)) {
    pm::OpScope scope(pm::OpKind::kItem);
    heap.flush_before_publish(fresh, fresh->record_size());
  }
  UpsertResult result = engine->upsert(fresh->key(), heap.ref_of(fresh));
  // Index nodes need blocks of their own size classes; a heap full of item chunks has none.
  for (int round = 0; result.status == UpsertStatus::kOutOfMemory && options.evict_when_full &&
                      round < kEvacuations && evacuate_for(kIndexNodeRoom, &stripe, fresh->key());
       ++round) {
    result = engine->upsert(fresh->key(), heap.ref_of(fresh));
  }
  heap.finish_publish();
  if (result.status == UpsertStatus::kOutOfMemory) return false;
  previous = result.previous == kNoItem ? nullptr : heap.item(result.previous);
  if (previous != nullptr) {
    recency.replace(result.previous, heap.ref_of(fresh), recency_stamp());
  } else {
    recency.push(heap.ref_of(fresh), recency_stamp());
  }
  return true;
}

void Store::Impl::free_record(ItemHeader* item) noexcept {
  if (!records) heap.free(item);
}

void Store::Impl::set_exptime(ItemHeader& item, std::int64_t exptime) noexcept {
  item.exptime = exptime;
  if (records) {
    // A touch is acknowledged, so it must survive a crash: a durable patch.
    try {
      (void)records->patch(item.key(), offsetof(ItemHeader, exptime),
                           std::as_bytes(std::span(&item.exptime, 1)), /*durable=*/true);
    } catch (const std::exception&) {
    }
    return;
  }
  pm::OpScope scope(pm::OpKind::kItem);
  heap.persist(&item.exptime, sizeof item.exptime);
}

void Store::Impl::save_hints(ItemHeader& item, std::uint8_t bits_before,
                             std::int64_t access_before) noexcept {
  if (!records) return;  // changed in place; hints are never flushed
  if (item.bits == bits_before && item.last_access == access_before) return;
  // bits (offset 5) through last_access (offset 40..48) in one patch: the fields between are
  // rewritten with the values they already have.
  constexpr std::size_t begin = offsetof(ItemHeader, bits);
  constexpr std::size_t end = offsetof(ItemHeader, last_access) + sizeof(std::int64_t);
  try {
    (void)records->patch(item.key(), begin,
                         std::span(reinterpret_cast<const std::byte*>(&item) + begin, end - begin),
                         /*durable=*/false);
  } catch (const std::exception&) {
  }
}

void Store::Impl::scan_keys(std::string_view from,
                            const std::function<bool(std::string_view key)>& visit) {
  if (records) {
    records->scan(from, 0,
                  [&](std::string_view key, std::span<const std::byte>) { return visit(key); });
    return;
  }
  engine->scan(from, [&](std::string_view key, ItemRef) { return visit(key); });
}

std::size_t Store::Impl::key_count() const noexcept {
  return records ? records->size() : engine->size();
}

ItemHeader* Store::Impl::build_buffer(std::string_view key, std::size_t value_size) noexcept {
  try {
    std::byte* at = built().resize(item_record_size(key.size(), value_size));
    auto* item = new (at) ItemHeader{};
    item->key_size = static_cast<std::uint8_t>(key.size());
    item->value_size = static_cast<std::uint32_t>(value_size);
    std::memcpy(item->key_data(), key.data(), key.size());
    return item;
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

}  // namespace pmcached::engine

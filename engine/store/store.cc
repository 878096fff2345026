// Store: the public facade, retrieval (get/gat/mg) and the storage commands (set, add,
// replace, append, prepend, cas, ms). See store.h for the semantics, store_impl.h for locking.
#include "engine/store/store.h"

#include <cstring>
#include <utility>

#include "engine/store/store_impl.h"

namespace pmcached::engine {
namespace {

bool valid_key(std::string_view key) noexcept {
  return !key.empty() && key.size() <= kMaxKeyLength;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Retrieval

GetOutcome Store::Impl::get(const GetRequest& request, const ItemVisitor& visit) noexcept {
  GetOutcome out;
  const std::string_view key = request.key;
  if (!valid_key(key)) return out;
  Stripe& stripe = stripes.for_key(key);
  const bool touching = request.touch_exptime.has_value();
  bool may_vivify = request.vivify_ttl.has_value();
  Room room(*this);

  for (int attempt = 1;; ++attempt) {
    std::size_t need = 0;
    {
      std::lock_guard lock(stripe.mutex);
      const std::int64_t now = clock.now();
      ItemHeader* item = find_live(key, stripe, now);

      if (item == nullptr && may_vivify) {
        // mg N: create an empty item and give this client the win.
        const std::size_t size = footprint(item_record_size(key.size(), 0));
        if (!room.reserve(size)) {
          need = size;
        } else if ((item = heap.allocate_item(key, 0)) == nullptr) {
          release(size);
        } else {
          item->exptime = to_absolute_exptime(*request.vivify_ttl, now);
          item->cas = cas_for(request.new_cas);
          item->last_update = item->last_access = now;
          if (publish(item, nullptr, size, stripe)) {
            out.vivified = out.won = true;
          } else {
            item = nullptr;
          }
        }
      }

      if (need == 0) {
        stripe.add(Counter::kCmdGet);
        if (touching) stripe.add(Counter::kCmdTouch);
        if (item == nullptr) {
          stripe.add(touching ? Counter::kTouchMisses : Counter::kGetMisses);
          return out;
        }
        stripe.add(touching ? Counter::kTouchHits : Counter::kGetHits);

        out.exptime_before = out.vivified ? 0 : item->exptime;
        if (touching && !out.vivified) {
          set_exptime(*item, to_absolute_exptime(*request.touch_exptime, now));
        }
        const bool token_sent = item->has(ItemHeader::kTokenSent);
        const bool stale = item->has(ItemHeader::kStale);
        const std::int64_t recache_exptime =
            request.recache_before_touch ? out.exptime_before : item->exptime;
        if (request.recache_below && !out.vivified && !token_sent && recache_exptime != 0 &&
            recache_exptime < to_absolute_exptime(*request.recache_below, now)) {
          out.won = true;  // mg R: remaining TTL below the token
        }
        if (stale && !token_sent) out.won = true;  // the first reader of a stale item wins
        out.status = StoreStatus::kHit;
        out.stale = stale;
        out.token_sent = token_sent;

        if (visit) {
          ItemView view;
          view.key = item->key();
          view.value = item->value();
          view.client_flags = item->client_flags;
          view.cas = item->cas;
          view.exptime = item->exptime;
          view.last_access = item->last_access;  // before this access (mg h, l)
          view.fetched = item->has(ItemHeader::kFetched);
          view.stale = stale;
          view.win_token_sent = token_sent;
          view.binary_key = item->has(ItemHeader::kKeyBinary);
          visit(view);
        }
        if (out.won && request.mark_win) item->bits |= ItemHeader::kTokenSent;
        if (request.bump) {
          item->bits |= ItemHeader::kFetched | ItemHeader::kReferenced;
          item->last_access = now;
        }
        return out;
      }
    }
    if (attempt >= kRoomAttempts || !make_room(need, room)) may_vivify = false;
  }
}

// ---------------------------------------------------------------------------------------------
// Storage commands

StoreOutcome Store::Impl::store(const StoreRequest& request) noexcept {
  StoreOutcome out;
  const std::string_view key = request.key;
  if (!valid_key(key)) return out;
  if (memcached_item_size(key.size(), request.value.size(), request.client_flags) >
      options.item_size_max) {
    // memcached drops the old value of a set that cannot be stored.
    if (request.mode == StoreMode::kSet || request.unlink_on_refusal) drop_key(key);
    out.status = StoreStatus::kTooLarge;
    return out;
  }

  StoreMode mode = request.mode;
  // ms with C: set and replace become cas (memcached's mset upgrade).
  if (request.compare_cas != 0 && (mode == StoreMode::kSet || mode == StoreMode::kReplace)) {
    mode = StoreMode::kCas;
  }
  const bool concat = mode == StoreMode::kAppend || mode == StoreMode::kPrepend;

  // A plain store's record is built before taking the lock: one allocation, value copied
  // outside the critical section.
  ItemHeader* fresh = nullptr;
  if (!concat) {
    fresh = heap.allocate_item(key, request.value.size());
    // No block of this size although the memory limit is not reached: the class is full and
    // every chunk is taken. Evict the class's least recently used record (or, for a class
    // without records, evacuate the oldest chunks) and try again, as memcached does.
    for (int round = 0; fresh == nullptr && options.evict_when_full &&
                        round < kClassEvictions + kEvacuations &&
                        make_block(item_record_size(key.size(), request.value.size()), round);
         ++round) {
      fresh = heap.allocate_item(key, request.value.size());
    }
    if (fresh == nullptr) {
      if (request.mode == StoreMode::kSet || request.unlink_on_refusal) drop_key(key);
      out.status = StoreStatus::kOutOfMemory;
      return out;
    }
    std::memcpy(fresh->value_data(), request.value.data(), request.value.size());
  }

  Stripe& stripe = stripes.for_key(key);
  if (mode == StoreMode::kSet) {
    // A plain set publishes without looking the key up first: the engine's upsert hands the old
    // record back, which saves one index descent on the most frequent write. The whole new
    // record is reserved; near the memory limit the general path below makes room instead.
    std::unique_lock lock(stripe.mutex);
    const std::size_t reserve = footprint(*fresh);
    if (try_reserve(reserve)) {
      const std::int64_t now = clock.now();
      fresh->client_flags = request.client_flags;
      fresh->exptime = to_absolute_exptime(request.exptime, now);
      fresh->bits = request.binary_key ? ItemHeader::kKeyBinary : 0;
      fresh->cas = cas_for(request.new_cas);
      fresh->last_update = fresh->last_access = now;
      ItemHeader* record = std::exchange(fresh, nullptr);  // publish() owns it now
      if (publish(record, nullptr, reserve, stripe, /*old_known=*/false)) {
        stripe.add(Counter::kCmdSet);
        out.cas = record->cas;
        out.value_size = record->value_size;
        out.status = StoreStatus::kStored;
        return out;
      }
      lock.unlock();
      drop_key(key);
      out.status = StoreStatus::kOutOfMemory;
      return out;
    }
  }
  bool may_grow = true;  // false once make_room() has failed
  Room room(*this);
  StoreStatus status = StoreStatus::kStored;
  for (int attempt = 1;; ++attempt) {
    std::size_t need = 0;
    {
      std::lock_guard lock(stripe.mutex);
      const std::int64_t now = clock.now();
      ItemHeader* old = find_live(key, stripe, now);
      ItemHeader* record = nullptr;  // the record to publish, if any
      bool stale_store = false;      // ms I with an older cas: store, marked stale
      status = StoreStatus::kStored;

      if (old == nullptr) {
        switch (mode) {
          case StoreMode::kSet:
          case StoreMode::kAdd:
            record = fresh;
            break;
          case StoreMode::kCas:
            stripe.add(Counter::kCasMisses);
            status = StoreStatus::kNotFound;
            break;
          case StoreMode::kReplace:
            status = StoreStatus::kNotStored;
            break;
          case StoreMode::kAppend:
          case StoreMode::kPrepend:
            // ms N: an append to a miss creates the item with the N ttl.
            if (!request.vivify_ttl) {
              status = StoreStatus::kNotStored;
            } else if ((record = heap.allocate_item(key, request.value.size())) == nullptr) {
              status = StoreStatus::kNotStored;
            } else {
              std::memcpy(record->value_data(), request.value.data(), request.value.size());
              record->client_flags = request.client_flags;
              record->exptime = to_absolute_exptime(*request.vivify_ttl, now);
            }
            break;
        }
      } else {
        const std::uint64_t compare = request.compare_cas;
        switch (mode) {
          case StoreMode::kAdd:
            old->bits |= ItemHeader::kReferenced;  // memcached bumps the existing item
            status = StoreStatus::kNotStored;
            break;
          case StoreMode::kSet:
          case StoreMode::kReplace:
            record = fresh;
            break;
          case StoreMode::kCas:
            if (compare != 0 && compare == old->cas) {
              record = fresh;
            } else if (request.invalidate && compare != 0 && compare < old->cas) {
              record = fresh;
              stale_store = true;
            } else {
              stripe.add(Counter::kCasBadval);
              status = StoreStatus::kExists;
            }
            if (record != nullptr) stripe.add(Counter::kCasHits);
            break;
          case StoreMode::kAppend:
          case StoreMode::kPrepend: {
            if (compare != 0 && compare != old->cas) {
              status = StoreStatus::kExists;
              break;
            }
            const std::string_view old_value = old->value();
            const std::size_t total = old_value.size() + request.value.size();
            if (memcached_item_size(key.size(), total, old->client_flags) > options.item_size_max ||
                (record = heap.allocate_item(key, total)) == nullptr) {
              status = StoreStatus::kNotStored;  // memcached: the combined item fails
              break;
            }
            const std::string_view first = mode == StoreMode::kAppend ? old_value : request.value;
            const std::string_view second = mode == StoreMode::kAppend ? request.value : old_value;
            std::memcpy(record->value_data(), first.data(), first.size());
            std::memcpy(record->value_data() + first.size(), second.data(), second.size());
            record->client_flags = old->client_flags;
            record->exptime = old->exptime;
            break;
          }
        }
      }

      if (record != nullptr) {
        if (record == fresh) {
          record->client_flags = request.client_flags;
          record->exptime = to_absolute_exptime(request.exptime, now);
          record->bits = request.binary_key ? ItemHeader::kKeyBinary : 0;
        }
        if (stale_store) {
          // Keeps the old TTL and a win already handed out (memcached CAS_STALE).
          record->exptime = old->exptime;
          record->bits |=
              static_cast<std::uint8_t>(ItemHeader::kStale | (old->bits & ItemHeader::kTokenSent));
        }
        const std::size_t reserve =
            growth(footprint(*record), old == nullptr ? 0 : footprint(*old));
        if (!room.reserve(reserve)) {
          if (record != fresh) heap.free(record);
          if (may_grow) {
            need = reserve;
          } else {
            status = concat ? StoreStatus::kNotStored : StoreStatus::kOutOfMemory;
          }
        } else {
          record->cas = cas_for(request.new_cas);
          record->last_update = record->last_access = now;
          if (record == fresh) fresh = nullptr;  // publish() owns it now
          if (publish(record, old, reserve, stripe)) {
            out.cas = record->cas;
            out.value_size = record->value_size;
          } else {
            status = StoreStatus::kOutOfMemory;
          }
        }
      }
      if (need == 0) {
        if (status != StoreStatus::kOutOfMemory) stripe.add(Counter::kCmdSet);
        break;
      }
    }
    if (attempt >= kRoomAttempts || !make_room(need, room)) may_grow = false;
  }

  if (fresh != nullptr) heap.free(fresh);
  if (status == StoreStatus::kOutOfMemory &&
      (request.mode == StoreMode::kSet || request.unlink_on_refusal)) {
    drop_key(key);
  }
  out.status = status;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Facade

namespace {

EngineContext context_for(ItemHeap& heap) {
  EngineContext context;
  context.key_of = [h = &heap](ItemRef ref) { return h->key_of(ref); };
  context.pool = heap.pool();
  context.allocator = heap.allocator();
  return context;
}

}  // namespace

Store::Store(const EngineFactory& make_engine, const Clock& clock, StoreOptions options) {
  std::unique_ptr<ItemHeap> heap = make_dram_heap();
  ItemHeap& heap_ref = *heap;
  impl_ = std::make_unique<Impl>(make_engine(context_for(heap_ref)), std::move(heap), heap_ref,
                                 clock, options);
}

Store::Store(const EngineFactory& make_engine, ItemHeap& heap, const Clock& clock,
             StoreOptions options)
    : impl_(std::make_unique<Impl>(make_engine(context_for(heap)), nullptr, heap, clock,
                                   options)) {}

Store::~Store() = default;

GetOutcome Store::get(const GetRequest& request, const ItemVisitor& visit) noexcept {
  return impl_->get(request, visit);
}
StoreOutcome Store::store(const StoreRequest& request) noexcept { return impl_->store(request); }
StoreStatus Store::remove(const DeleteRequest& request) noexcept { return impl_->remove(request); }
ArithmeticOutcome Store::arithmetic(const ArithmeticRequest& request) noexcept {
  return impl_->arithmetic(request);
}
StoreStatus Store::touch(std::string_view key, std::int64_t exptime) noexcept {
  return impl_->touch(key, exptime);
}
void Store::flush_all(std::int64_t delay_seconds) noexcept { impl_->flush_all(delay_seconds); }
std::size_t Store::reclaim_expired(std::size_t max_visits) noexcept {
  return impl_->reclaim_dead(max_visits);
}
void Store::reset_stats() noexcept { impl_->reset_stats(); }
StoreStats Store::stats() const noexcept { return impl_->stats(); }
const IndexEngine& Store::engine() const noexcept { return *impl_->engine; }
const StoreOptions& Store::options() const noexcept { return impl_->options; }
std::int64_t Store::absolute_exptime(std::int64_t client_exptime) const noexcept {
  return to_absolute_exptime(client_exptime, now());
}
std::int64_t Store::now() const noexcept { return impl_->clock.now(); }

}  // namespace pmcached::engine

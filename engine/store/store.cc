// Store: the public facade, retrieval (get/gat/mg) and the storage commands (set, add,
// replace, append, prepend, cas, ms). See store.h for the semantics, store_impl.h for locking.
#include "engine/store/store.h"

#include <cstring>
#include <utility>

#include "engine/pm/pool.h"
#include "engine/store/store_impl.h"

namespace pmcached::engine {
namespace {

std::optional<ExistingItem> existing_of(const ItemHeader* item) noexcept {
  if (item == nullptr) return std::nullopt;
  return ExistingItem{item->cas, item->client_flags, item->exptime, item->bits, item->value()};
}

// cas hits, misses and badval, by the plan's status.
Counter cas_stat(StoreStatus status) noexcept {
  if (status == StoreStatus::kStored) return Counter::kCasHits;
  return status == StoreStatus::kNotFound ? Counter::kCasMisses : Counter::kCasBadval;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Retrieval

GetOutcome Store::Impl::get(const GetRequest& request, const ItemVisitor& visit) noexcept {
  GetOutcome out;
  if (!valid_key(request.key)) return out;
  Stripe& stripe = stripes.for_key(request.key);
  retry_with_room(stripe, [&](Room& room, bool may_grow) -> std::size_t {
    const std::int64_t now = clock.now();
    out.now = now;
    ItemHeader* item = find_live(request.key, stripe, now);
    if (item == nullptr && request.vivify_ttl && may_grow) {
      // mg N: create an empty item and give this client the win.
      RecordSpec spec;
      spec.key = request.key;
      spec.exptime = to_absolute_exptime(*request.vivify_ttl, now);
      spec.cas = request.new_cas;
      spec.last_update = spec.last_access = now;
      const PutResult put = put_record(spec, nullptr, stripe, room);
      if (put.status == PutStatus::kNoRoom) return put.need;
      item = put.record;
      out.vivified = out.won = item != nullptr;
    }
    answer_get(request, item, stripe, now, visit, out);
    return 0;
  });
  return out;
}

void Store::Impl::answer_get(const GetRequest& request, ItemHeader* item, Stripe& stripe,
                             std::int64_t now, const ItemVisitor& visit, GetOutcome& out) noexcept {
  const bool touching = request.touch_exptime.has_value();
  if (item == nullptr && touching && request.touch_miss_is_get_miss) {
    stripe.add(Counter::kCmdGet);
    stripe.add(Counter::kGetMisses);
    return;
  }
  if (request.count_get) stripe.add(Counter::kCmdGet);
  if (touching) stripe.add(Counter::kCmdTouch);
  if (item == nullptr) {
    stripe.add(touching ? Counter::kTouchMisses : Counter::kGetMisses);
    return;
  }
  stripe.add(touching ? Counter::kTouchHits : Counter::kGetHits);
  count(touching ? ClassCounter::kTouchHits : ClassCounter::kGetHits, *item);

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

  if (visit) visit(view(*item));
  const std::uint8_t bits_before = item->bits;
  const std::int64_t access_before = item->last_access;
  if (out.won && request.mark_win) item->bits |= ItemHeader::kTokenSent;
  if (request.bump) note_access(*item, now);
  save_hints(*item, bits_before, access_before);
}

// ---------------------------------------------------------------------------------------------
// Storage commands

StoreOutcome Store::Impl::store(const StoreRequest& request) noexcept {
  if (!valid_key(request.key)) return {};
  if (memcached_item_size(request.key.size(), request.value.size(), request.client_flags) >
      options.item_size_max) {
    return refused(request, StoreStatus::kTooLarge);
  }
  const StoreMode mode = effective_mode(request);
  // A plain store's record is built before taking the lock: one allocation, value copied
  // outside the critical section. Append and prepend need the old value first.
  ItemHeader* fresh = nullptr;
  if (mode != StoreMode::kAppend && mode != StoreMode::kPrepend) {
    RecordSpec value;
    value.key = request.key;
    value.first = request.value;
    value.client_flags = request.client_flags;  // part of its class size
    fresh = allocate_record_evicting(value);
    if (fresh == nullptr) return refused(request, StoreStatus::kOutOfMemory);
  }
  return store_built(request, fresh);
}

StoreOutcome Store::Impl::store_built(const StoreRequest& request, ItemHeader* fresh) noexcept {
  const StoreMode mode = effective_mode(request);
  StoreOutcome out;
  // A record engine's write does not hand the old record back, so its sets look the key up.
  if (mode == StoreMode::kSet && !records && store_blind(request, fresh, out)) return out;
  Stripe& stripe = stripes.for_key(request.key);
  retry_with_room(stripe, [&](Room& room, bool may_grow) {
    return store_locked(request, stripe, room, may_grow, fresh, out);
  });
  if (fresh != nullptr) free_record(fresh);
  if (out.status == StoreStatus::kOutOfMemory) return refused(request, out.status);
  return out;
}

StoreOutcome Store::Impl::refused(const StoreRequest& request, StoreStatus status) noexcept {
  if (status == StoreStatus::kOutOfMemory) {
    count(ClassCounter::kOutOfMemory,
          memcached_item_size(request.key.size(), request.value.size(), request.client_flags));
  }
  // memcached drops the old value of a set that cannot be stored; ms in every mode.
  if (request.mode == StoreMode::kSet || request.unlink_on_refusal) drop_key(request.key);
  StoreOutcome out;
  out.status = status;
  return out;
}

bool Store::Impl::store_blind(const StoreRequest& request, ItemHeader*& fresh,
                              StoreOutcome& out) noexcept {
  // The engine's upsert hands the old record back, which saves one index descent on the most
  // frequent write. The whole new record is reserved; near the memory limit the general path
  // makes room instead.
  Stripe& stripe = stripes.for_key(request.key);
  std::unique_lock lock(stripe.mutex);
  Room room(*this);
  // A set's record does not depend on the old item.
  const StorePlan plan = plan_store(request, std::nullopt, clock.now(), options.item_size_max);
  const PutResult put = put_record(plan.record, nullptr, stripe, room, fresh, /*old_known=*/false);
  if (put.status == PutStatus::kNoRoom) return false;
  fresh = nullptr;  // put_record() owns it now
  if (put.status != PutStatus::kPublished) {
    lock.unlock();
    out = refused(request, StoreStatus::kOutOfMemory);
    return true;
  }
  stripe.add(Counter::kCmdSet);
  count(ClassCounter::kCmdSet, *put.record);
  out.cas = put.record->cas;
  out.value_size = put.record->value_size;
  out.status = StoreStatus::kStored;
  return true;
}

std::size_t Store::Impl::store_locked(const StoreRequest& request, Stripe& stripe, Room& room,
                                      bool may_grow, ItemHeader*& fresh,
                                      StoreOutcome& out) noexcept {
  const std::int64_t now = clock.now();
  ItemHeader* old = find_live(request.key, stripe, now);
  const StorePlan plan = plan_store(request, existing_of(old), now, options.item_size_max);
  if (effective_mode(request) == StoreMode::kCas) {
    stripe.add(cas_stat(plan.status));
    // memcached counts cas_hits and cas_badval in the class of the item the cas met.
    if (old != nullptr && plan.status == StoreStatus::kStored) count(ClassCounter::kCasHits, *old);
    if (old != nullptr && plan.status == StoreStatus::kExists)
      count(ClassCounter::kCasBadval, *old);
  }
  if (plan.bump_existing) old->bits |= ItemHeader::kReferenced;
  out.status = plan.status;
  if (plan.status == StoreStatus::kStored) {
    const std::size_t need = store_planned(plan.record, old, stripe, room, may_grow, fresh, out);
    if (need != 0) return need;
  }
  if (out.status != StoreStatus::kOutOfMemory) {
    stripe.add(Counter::kCmdSet);
    // memcached counts a set in the class of the item the request's data was read into.
    count(ClassCounter::kCmdSet,
          memcached_item_size(request.key.size(), request.value.size(), request.client_flags));
  }
  return 0;
}

std::size_t Store::Impl::store_planned(const RecordSpec& spec, ItemHeader* old, Stripe& stripe,
                                       Room& room, bool may_grow, ItemHeader*& fresh,
                                       StoreOutcome& out) noexcept {
  // Only append and prepend come without a record built before locking; theirs is built before
  // reserving, and memcached answers NOT_STORED when the combined item cannot be had.
  const bool concat = fresh == nullptr;
  ItemHeader* built = concat ? allocate_record(spec) : fresh;
  if (built == nullptr) {
    out.status = StoreStatus::kNotStored;
    return 0;
  }
  const PutResult put = put_record(spec, old, stripe, room, built);
  if (put.status == PutStatus::kNoRoom) {
    if (concat) free_record(built);
    if (may_grow) return put.need;
    out.status = concat ? StoreStatus::kNotStored : StoreStatus::kOutOfMemory;
    return 0;
  }
  fresh = nullptr;  // put_record() owns it now
  if (put.status != PutStatus::kPublished) {
    out.status = StoreStatus::kOutOfMemory;
    return 0;
  }
  out.cas = put.record->cas;
  out.value_size = put.record->value_size;
  return 0;
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
  std::unique_ptr<ItemHeap> heap = make_dram_heap(options.memory_limit_bytes, options.slabs);
  ItemHeap& heap_ref = *heap;
  impl_ = std::make_unique<Impl>(make_engine(context_for(heap_ref)), nullptr, std::move(heap),
                                 heap_ref, nullptr, clock, options);
}

Store::Store(const EngineFactory& make_engine, ItemHeap& heap, const Clock& clock,
             StoreOptions options)
    : impl_(std::make_unique<Impl>(make_engine(context_for(heap)), nullptr, nullptr, heap,
                                   heap.pool(), clock, options)) {}

Store::Store(const RecordEngineFactory& make_engine, const RecordEngineContext& context,
             const Clock& clock, StoreOptions options) {
  // The heap is only there for the parts of the store that never run with a record engine
  // (eviction); records are built in per-thread buffers (store_records.cc). One page will do.
  std::unique_ptr<ItemHeap> heap = make_dram_heap(0, options.slabs);
  ItemHeap& heap_ref = *heap;
  impl_ = std::make_unique<Impl>(nullptr, make_engine(context), std::move(heap), heap_ref,
                                 context.pool, clock, options);
  impl_->records_allocator = context.allocator;
}

Store::~Store() = default;

GetOutcome Store::get(const GetRequest& request, const ItemVisitor& visit) noexcept {
  return impl_->get(request, visit);
}
StoreOutcome Store::store(const StoreRequest& request) noexcept { return impl_->store(request); }
void Store::store_batch(std::span<const StoreRequest> requests,
                        std::span<StoreOutcome> outcomes) noexcept {
  impl_->store_batch(requests, outcomes);
}
bool Store::stores_in_groups() const noexcept { return impl_->stores_in_groups(); }
StoreStatus Store::remove(const DeleteRequest& request) noexcept { return impl_->remove(request); }
ArithmeticOutcome Store::arithmetic(const ArithmeticRequest& request) noexcept {
  return impl_->arithmetic(request);
}
StoreStatus Store::touch(std::string_view key, std::int64_t exptime) noexcept {
  return impl_->touch(key, exptime);
}
void Store::flush_all(std::int64_t delay_seconds) noexcept { impl_->flush_all(delay_seconds); }
SweepResult Store::reclaim_expired(std::size_t max_visits) noexcept {
  return impl_->reclaim_dead(max_visits);
}
void Store::reset_stats() noexcept { impl_->reset_stats(); }
StoreStats Store::stats() const noexcept { return impl_->stats(); }
SlabStats Store::slab_stats() const { return impl_->slab_stats(); }
std::optional<pm::SlabSettings> Store::slab_settings() const {
  if (impl_->records) return std::nullopt;
  if (impl_->pool == nullptr) return impl_->options.slabs;
  return impl_->pool->slab_settings();
}
const IndexEngine& Store::engine() const noexcept { return *impl_->engine; }
std::string_view Store::engine_name() const noexcept {
  return impl_->records ? impl_->records->name() : impl_->engine->name();
}
EngineCapabilities Store::engine_capabilities() const noexcept {
  return impl_->records ? impl_->records->capabilities() : impl_->engine->capabilities();
}
std::vector<EngineStat> Store::engine_stats() const {
  return impl_->records ? impl_->records->stats() : impl_->engine->stats();
}
void Store::close() {
  if (impl_->records) impl_->records->close();
}
const StoreOptions& Store::options() const noexcept { return impl_->options; }
std::int64_t Store::absolute_exptime(std::int64_t client_exptime) const noexcept {
  return absolute_exptime(client_exptime, now());
}
std::int64_t Store::absolute_exptime(std::int64_t client_exptime, std::int64_t now) noexcept {
  return to_absolute_exptime(client_exptime, now);
}
std::int64_t Store::now() const noexcept { return impl_->clock.now(); }

std::uint32_t Store::class_id(std::size_t key_size, std::size_t value_size,
                              std::uint32_t client_flags) const noexcept {
  if (impl_->records) return 1;
  return static_cast<std::uint32_t>(
      impl_->heap.size_class(memcached_item_size(key_size, value_size, client_flags)) + 1);
}

}  // namespace pmcached::engine

// Store::Impl::store_batch: the plain sets of one server turn, made durable together (group
// commit, docs/TAIL_LATENCY.md). A set alone waits twice for write-backs: for its record before
// the index may point at it, and for the index's reference before the reply. Here the records of
// the whole group are written back under one fence, and the engine publishes all references under
// one lock and one fence (IndexEngine::upsert_batch). Between the two fences the store executes
// no locked instruction, which would wait for the write-backs in flight as a fence does: the
// stripes, reservations, cas values and allocations are taken before, the recency lists, counters
// and frees come after. (An engine insert that makes a node takes the allocator's lock.)
//
// A volatile heap stores in groups too, though its engine has no group commit (upsert_batch() is
// one upsert() after another): the recency lists' updates of a group are made together, so that
// their cache misses overlap (RecencyLists::replace_all). The persistent engines without group
// commit (fptree, wbtree, nvtree) do not: they would hold the group's stripes through a fence or
// two per key and save none.
#include <algorithm>
#include <array>
#include <vector>

#include "engine/pm/fault_injection.h"
#include "engine/pm/persistence.h"
#include "engine/store/store_impl.h"

namespace pmcached::engine {
namespace {

// Requests grouped at most; the rest of a longer batch goes in further groups. A group holds
// up to this many stripe mutexes and then takes a few more (the allocator's, the lists'):
// ThreadSanitizer's deadlock detector stops the process when a thread holds 64. Write-backs
// stop getting cheaper per line past about 16 under one fence (docs/TAIL_LATENCY.md, stop 42).
constexpr std::size_t kGroup = 32;

// A set of the group: its record, written and stamped before the engine publishes it.
struct Member {
  std::size_t request = 0;  // index into the batch
  ItemHeader* fresh = nullptr;
  Stripe* stripe = nullptr;
  std::size_t reserved = 0;
};

}  // namespace

bool Store::Impl::stores_in_groups() const noexcept {
  return !records && (heap.pool() == nullptr || engine->capabilities().group_commit);
}

void Store::Impl::store_batch(std::span<const StoreRequest> requests,
                              std::span<StoreOutcome> outcomes) noexcept {
  for (std::size_t begin = 0; begin < requests.size(); begin += kGroup) {
    const std::size_t end = std::min(requests.size(), begin + kGroup);
    store_group(requests.subspan(begin, end - begin), outcomes.subspan(begin, end - begin));
  }
}

void Store::Impl::store_group(std::span<const StoreRequest> requests,
                              std::span<StoreOutcome> outcomes) noexcept {
  // What goes one by one, after the group: anything but a plain set of a valid key that fits, a
  // key seen before in this batch (so a key's requests keep their order), a record the heap has
  // no block for now (store() evicts), a reservation over the memory limit (store() makes room)
  // and an index with no room for a node (store() evacuates).
  const bool grouping = stores_in_groups();
  std::array<bool, kGroup> alone{};
  std::array<ItemHeader*, kGroup> built{};  // records of requests done alone, built already
  std::array<Member, kGroup> members{};
  std::size_t members_count = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const StoreRequest& request = requests[i];
    bool seen = false;
    for (std::size_t j = 0; j < i && !seen; ++j) seen = requests[j].key == request.key;
    alone[i] = true;
    if (!grouping || seen || effective_mode(request) != StoreMode::kSet ||
        !valid_key(request.key) ||
        memcached_item_size(request.key.size(), request.value.size(), request.client_flags) >
            options.item_size_max) {
      continue;
    }
    RecordSpec value;
    value.key = request.key;
    value.first = request.value;
    value.client_flags = request.client_flags;
    ItemHeader* fresh = allocate_record(value);
    if (fresh == nullptr) continue;
    alone[i] = false;
    members[members_count++] = {i, fresh, &stripes.for_key(request.key), 0};
  }

  // Stripes in address order: every other thread holds at most one (lock_stripes.h).
  std::array<Stripe*, kGroup> locked{};
  for (std::size_t m = 0; m < members_count; ++m) locked[m] = members[m].stripe;
  std::sort(locked.begin(), locked.begin() + members_count);
  const std::size_t stripe_count = static_cast<std::size_t>(
      std::unique(locked.begin(), locked.begin() + members_count) - locked.begin());
  for (std::size_t s = 0; s < stripe_count; ++s) locked[s]->mutex.lock();

  // Stamp each record as put_record() does for a set that did not look its key up, and reserve
  // its whole footprint (whatever it replaces is released after).
  const std::int64_t now = clock.now();
  std::array<BatchUpsert, kGroup> batch{};
  std::size_t grouped = 0;
  for (std::size_t m = 0; m < members_count; ++m) {
    Member& member = members[m];
    const StoreRequest& request = requests[member.request];
    const StorePlan plan = plan_store(request, std::nullopt, now, options.item_size_max);
    const std::size_t reserve = footprint(plan.record);
    if (plan.status != StoreStatus::kStored || !try_reserve(reserve)) {
      built[member.request] = member.fresh;  // store_built() makes room, as store() would
      alone[member.request] = true;
      continue;
    }
    member.reserved = reserve;
    ItemHeader* record = member.fresh;
    stamp_record(*record, plan.record);
    seal_item(*record);
    members[grouped] = member;
    batch[grouped++] = {record->key(), heap.ref_of(record)};
  }

  // Durability order: every record is durable before the index can point at it.
  if (grouped > 0 && !pm::FaultInjection::active(pm::Fault::kSkipRecordPersist)) {
    pm::OpScope scope(pm::OpKind::kItem);
    for (std::size_t m = 0; m < grouped; ++m) {
      heap.flush(members[m].fresh, members[m].fresh->record_size());
    }
    heap.fence();
  }
  if (grouped > 0) engine->upsert_batch(std::span(batch.data(), grouped));

  // The recency lists first, for the whole group (their misses overlap), then the rest of what
  // publish() does for a set that did not look its key up.
  std::array<RecencyLists::Replacement, kGroup> published{};
  std::size_t published_count = 0;
  for (std::size_t m = 0; m < grouped; ++m) {
    const UpsertResult& result = batch[m].result;
    if (result.status == UpsertStatus::kOutOfMemory) continue;
    published[published_count++] = {result.previous, heap.ref_of(members[m].fresh)};
  }
  recency.replace_all(std::span(published.data(), published_count), recency_stamp());
  for (std::size_t m = 0; m < grouped; ++m) {
    const Member& member = members[m];
    const UpsertResult& result = batch[m].result;
    if (result.status == UpsertStatus::kOutOfMemory) {  // nothing changed
      release(member.reserved);
      built[member.request] = member.fresh;  // store_built() evacuates, as store() would
      alone[member.request] = true;
      continue;
    }
    Stripe& stripe = *member.stripe;
    stripe.add(Counter::kTotalItems);
    if (result.previous == kNoItem) {
      stripe.add(Counter::kCurrItems);
    } else {
      retire_unseen(*heap.item(result.previous), stripe, now);
    }
    stripe.add(Counter::kCmdSet);
    count(ClassCounter::kCmdSet, *member.fresh);
    outcomes[member.request] = {StoreStatus::kStored, member.fresh->cas, member.fresh->value_size};
  }
  for (std::size_t s = 0; s < stripe_count; ++s) locked[s]->mutex.unlock();

  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (!alone[i]) continue;
    outcomes[i] = built[i] != nullptr ? store_built(requests[i], built[i]) : store(requests[i]);
  }
}

}  // namespace pmcached::engine

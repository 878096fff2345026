#include "engine/store/store_plan.h"

#include "engine/store/expiry.h"
#include "engine/store/item.h"

namespace pmcached::engine {
namespace {

StorePlan refuse(StoreStatus status, bool bump_existing = false) noexcept {
  StorePlan plan;
  plan.status = status;
  plan.bump_existing = bump_existing;
  return plan;
}

StorePlan store(const RecordSpec& record, ValueLayout layout = ValueLayout::kNew) noexcept {
  StorePlan plan;
  plan.layout = layout;
  plan.record = record;
  return plan;
}

// The record of a set, add, replace or cas: everything from the request.
RecordSpec request_record(const StoreRequest& request, std::int64_t now) noexcept {
  RecordSpec record;
  record.key = request.key;
  record.first = request.value;
  record.client_flags = request.client_flags;
  record.exptime = to_absolute_exptime(request.exptime, now);
  record.bits = request.binary_key ? ItemHeader::kKeyBinary : 0;
  record.cas = request.new_cas;
  record.last_update = record.last_access = now;
  return record;
}

StorePlan plan_absent(const StoreRequest& request, StoreMode mode, std::int64_t now) noexcept {
  switch (mode) {
    case StoreMode::kSet:
    case StoreMode::kAdd: return store(request_record(request, now));
    case StoreMode::kCas: return refuse(StoreStatus::kNotFound);
    case StoreMode::kReplace: return refuse(StoreStatus::kNotStored);
    case StoreMode::kAppend:
    case StoreMode::kPrepend: break;
  }
  // ms N: an append to a miss creates the item with the N ttl.
  if (!request.vivify_ttl) return refuse(StoreStatus::kNotStored);
  RecordSpec record = request_record(request, now);
  record.exptime = to_absolute_exptime(*request.vivify_ttl, now);
  record.bits = 0;
  return store(record);
}

StorePlan plan_cas(const StoreRequest& request, const ExistingItem& old,
                   std::int64_t now) noexcept {
  const std::uint64_t compare = request.compare_cas;
  if (compare != 0 && compare == old.cas) return store(request_record(request, now));
  if (!request.invalidate || compare == 0 || compare >= old.cas) {
    return refuse(StoreStatus::kExists);
  }
  // ms I with an older cas: stored as stale, keeping the old TTL and a win already handed out
  // (memcached CAS_STALE).
  RecordSpec record = request_record(request, now);
  record.exptime = old.exptime;
  record.bits |=
      static_cast<std::uint8_t>(ItemHeader::kStale | (old.bits & ItemHeader::kTokenSent));
  return store(record);
}

StorePlan plan_concat(const StoreRequest& request, StoreMode mode, const ExistingItem& old,
                      std::int64_t now, std::size_t item_size_max) noexcept {
  if (request.compare_cas != 0 && request.compare_cas != old.cas) {
    return refuse(StoreStatus::kExists);
  }
  const std::size_t total = old.value.size() + request.value.size();
  if (memcached_item_size(request.key.size(), total, old.client_flags) > item_size_max) {
    return refuse(StoreStatus::kNotStored);  // memcached: the combined item fails
  }
  const bool append = mode == StoreMode::kAppend;
  RecordSpec record;
  record.key = request.key;
  record.first = append ? old.value : request.value;
  record.second = append ? request.value : old.value;
  record.client_flags = old.client_flags;
  record.exptime = old.exptime;
  record.cas = request.new_cas;
  record.last_update = record.last_access = now;
  return store(record, append ? ValueLayout::kOldThenNew : ValueLayout::kNewThenOld);
}

}  // namespace

StoreMode effective_mode(const StoreRequest& request) noexcept {
  const bool upgrades = request.mode == StoreMode::kSet || request.mode == StoreMode::kReplace;
  return request.compare_cas != 0 && upgrades ? StoreMode::kCas : request.mode;
}

StorePlan plan_store(const StoreRequest& request, const std::optional<ExistingItem>& existing,
                     std::int64_t now, std::size_t item_size_max) noexcept {
  const StoreMode mode = effective_mode(request);
  if (!existing) return plan_absent(request, mode, now);
  switch (mode) {
    case StoreMode::kAdd: return refuse(StoreStatus::kNotStored, /*bump_existing=*/true);
    case StoreMode::kSet:
    case StoreMode::kReplace: return store(request_record(request, now));
    case StoreMode::kCas: return plan_cas(request, *existing, now);
    case StoreMode::kAppend:
    case StoreMode::kPrepend: break;
  }
  return plan_concat(request, mode, *existing, now, item_size_max);
}

}  // namespace pmcached::engine

// The storage commands' decision, apart from how it is carried out: given a request and the
// key's live item (if any), plan_store() says whether the command stores, and if so what the
// new record holds. It is pure (no I/O, no locks, no allocation), so every rule of set, add,
// replace, append, prepend and cas can be tested without a store.
//
// Thread safety: functions of their arguments only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "engine/store/store.h"

namespace pmcached::engine {

// The header fields and value of a record to build; views into the request and the old item,
// valid while the caller holds the key's stripe lock.
struct RecordSpec {
  std::string_view key;
  std::string_view first;  // the value: first, then second, then `pad` spaces
  std::string_view second;
  std::size_t pad = 0;
  std::uint32_t client_flags = 0;
  std::int64_t exptime = 0;          // absolute; 0 = never
  std::uint8_t bits = 0;             // ItemHeader bits
  std::optional<std::uint64_t> cas;  // none: the next cas value
  std::int64_t last_update = 0;
  std::int64_t last_access = 0;

  [[nodiscard]] std::size_t value_size() const noexcept {
    return first.size() + second.size() + pad;
  }
};

// What plan_store() needs of the key's live item.
struct ExistingItem {
  std::uint64_t cas = 0;
  std::uint32_t client_flags = 0;
  std::int64_t exptime = 0;  // absolute
  std::uint8_t bits = 0;     // ItemHeader bits
  std::string_view value;
};

enum class ValueLayout : std::uint8_t { kNew, kOldThenNew, kNewThenOld };

struct StorePlan {
  StoreStatus status = StoreStatus::kStored;  // kStored: build `record`; else the refusal
  ValueLayout layout = ValueLayout::kNew;
  bool bump_existing = false;  // add on a present item: memcached bumps it anyway
  RecordSpec record;           // meaningful when status is kStored
};

// The mode a request really runs in: ms with C turns set and replace into cas (memcached's
// mset upgrade).
[[nodiscard]] StoreMode effective_mode(const StoreRequest& request) noexcept;

// Decides a storage command on `existing` (nullopt: the key has no live item) at `now`. The
// combined value of append/prepend must fit `item_size_max` (memcached's item size).
[[nodiscard]] StorePlan plan_store(const StoreRequest& request,
                                   const std::optional<ExistingItem>& existing, std::int64_t now,
                                   std::size_t item_size_max) noexcept;

}  // namespace pmcached::engine

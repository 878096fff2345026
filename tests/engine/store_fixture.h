// Test fixture: a Store over the "dram" engine with a ManualClock, plus small helpers that
// copy what a visitor sees.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "engine/open_store.h"
#include "engine/store/clock.h"
#include "engine/store/store.h"

namespace pmcached::engine::testing {

// A copy of an ItemView.
struct Item {
  std::string key;
  std::string value;
  std::uint32_t client_flags = 0;
  std::uint64_t cas = 0;
  std::int64_t exptime = 0;
  std::int64_t last_access = 0;
  bool fetched = false;
  bool stale = false;
  bool win_token_sent = false;
};

// A volatile store through the front door; the OpenStore owns it.
inline std::unique_ptr<OpenStore> make_store(const Clock& clock, StoreOptions options = {},
                                             std::string_view engine = "dram") {
  StoreConfig config;
  config.engine = std::string(engine);
  config.options = options;
  return open_store(std::move(config), clock);
}

class StoreTest : public ::testing::Test {
 protected:
  static constexpr std::int64_t kStart = 1'700'000'000;

  StoreTest() : clock_(kStart) { reopen({}); }
  void reopen(StoreOptions options) {
    opened_.reset();
    opened_ = make_store(clock_, options);
    store_ = &opened_->store();
  }

  StoreOutcome put(std::string_view key, std::string_view value, StoreMode mode = StoreMode::kSet,
                   std::uint32_t flags = 0, std::int64_t exptime = 0, std::uint64_t cas = 0) {
    StoreRequest r;
    r.mode = mode;
    r.key = key;
    r.value = value;
    r.client_flags = flags;
    r.exptime = exptime;
    r.compare_cas = cas;
    return store_->store(r);
  }
  StoreStatus set(std::string_view key, std::string_view value, std::int64_t exptime = 0) {
    return put(key, value, StoreMode::kSet, 0, exptime).status;
  }

  // get with full control; the item copy is empty on a miss.
  std::pair<GetOutcome, std::optional<Item>> fetch(const GetRequest& request) {
    std::optional<Item> item;
    const GetOutcome outcome = store_->get(request, [&](const ItemView& v) {
      item = Item{std::string(v.key), std::string(v.value), v.client_flags, v.cas,
                  v.exptime,          v.last_access,        v.fetched,      v.stale,
                  v.win_token_sent};
    });
    EXPECT_EQ(outcome.status == StoreStatus::kHit, item.has_value());
    return {outcome, item};
  }
  std::optional<Item> get(std::string_view key) {
    GetRequest r;
    r.key = key;
    return fetch(r).second;
  }
  std::optional<std::string> value(std::string_view key) {
    auto item = get(key);
    if (!item) return std::nullopt;
    return item->value;
  }

  ManualClock clock_;
  std::unique_ptr<OpenStore> opened_;
  Store* store_ = nullptr;
};

}  // namespace pmcached::engine::testing

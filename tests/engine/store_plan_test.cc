// plan_store(): the storage commands' decision, tested without a store.
#include "engine/store/store_plan.h"

#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "engine/store/item.h"

namespace pmcached::engine {
namespace {

constexpr std::int64_t kNow = 1'700'000'000;
constexpr std::size_t kItemSizeMax = 1u << 20;

StoreRequest request(StoreMode mode, std::string_view value = "new") {
  StoreRequest r;
  r.mode = mode;
  r.key = "key";
  r.value = value;
  r.client_flags = 7;
  r.exptime = 100;  // relative
  return r;
}

ExistingItem existing(std::uint64_t cas = 40, std::string_view value = "old") {
  ExistingItem item;
  item.cas = cas;
  item.client_flags = 3;
  item.exptime = kNow + 500;
  item.value = value;
  return item;
}

StorePlan plan(const StoreRequest& r, const std::optional<ExistingItem>& item) {
  return plan_store(r, item, kNow, kItemSizeMax);
}

std::string value_of(const RecordSpec& spec) {
  return std::string(spec.first) + std::string(spec.second) + std::string(spec.pad, ' ');
}

// The record of a set/add/replace/cas: value, flags and exptime from the request.
void expect_request_record(const StorePlan& p) {
  EXPECT_EQ(p.status, StoreStatus::kStored);
  EXPECT_EQ(p.layout, ValueLayout::kNew);
  EXPECT_EQ(value_of(p.record), "new");
  EXPECT_EQ(p.record.client_flags, 7u);
  EXPECT_EQ(p.record.exptime, kNow + 100);
  EXPECT_EQ(p.record.bits, 0);
  EXPECT_EQ(p.record.last_update, kNow);
  EXPECT_EQ(p.record.last_access, kNow);
}

TEST(StorePlan, SetStoresOnAbsentAndPresent) {
  expect_request_record(plan(request(StoreMode::kSet), std::nullopt));
  expect_request_record(plan(request(StoreMode::kSet), existing()));
}

TEST(StorePlan, AddStoresOnlyOnAbsentAndBumpsAPresentItem) {
  const StorePlan absent = plan(request(StoreMode::kAdd), std::nullopt);
  expect_request_record(absent);
  EXPECT_FALSE(absent.bump_existing);
  const StorePlan present = plan(request(StoreMode::kAdd), existing());
  EXPECT_EQ(present.status, StoreStatus::kNotStored);
  EXPECT_TRUE(present.bump_existing);
}

TEST(StorePlan, ReplaceStoresOnlyOnPresent) {
  EXPECT_EQ(plan(request(StoreMode::kReplace), std::nullopt).status, StoreStatus::kNotStored);
  expect_request_record(plan(request(StoreMode::kReplace), existing()));
}

TEST(StorePlan, AppendAndPrependCombineWithTheOldValueAndKeepItsFlagsAndExptime) {
  const StorePlan append = plan(request(StoreMode::kAppend), existing());
  EXPECT_EQ(append.status, StoreStatus::kStored);
  EXPECT_EQ(append.layout, ValueLayout::kOldThenNew);
  EXPECT_EQ(value_of(append.record), "oldnew");
  EXPECT_EQ(append.record.client_flags, 3u);
  EXPECT_EQ(append.record.exptime, kNow + 500);

  const StorePlan prepend = plan(request(StoreMode::kPrepend), existing());
  EXPECT_EQ(prepend.layout, ValueLayout::kNewThenOld);
  EXPECT_EQ(value_of(prepend.record), "newold");
}

TEST(StorePlan, AppendAndPrependToAMissAreNotStoredUnlessVivified) {
  EXPECT_EQ(plan(request(StoreMode::kAppend), std::nullopt).status, StoreStatus::kNotStored);
  EXPECT_EQ(plan(request(StoreMode::kPrepend), std::nullopt).status, StoreStatus::kNotStored);
  StoreRequest vivify = request(StoreMode::kAppend);
  vivify.vivify_ttl = 30;
  vivify.binary_key = true;
  const StorePlan p = plan(vivify, std::nullopt);
  EXPECT_EQ(p.status, StoreStatus::kStored);
  EXPECT_EQ(p.layout, ValueLayout::kNew);
  EXPECT_EQ(value_of(p.record), "new");
  EXPECT_EQ(p.record.client_flags, 7u);
  EXPECT_EQ(p.record.exptime, kNow + 30);
  EXPECT_EQ(p.record.bits, 0);  // not marked binary, as before
}

TEST(StorePlan, AppendWithAMismatchedCasExists) {
  StoreRequest r = request(StoreMode::kAppend);
  r.compare_cas = 41;
  EXPECT_EQ(plan(r, existing(40)).status, StoreStatus::kExists);
  r.compare_cas = 40;
  EXPECT_EQ(plan(r, existing(40)).status, StoreStatus::kStored);
}

TEST(StorePlan, AppendPastTheItemSizeLimitIsNotStored) {
  const std::string big(kItemSizeMax / 2, 'x');
  EXPECT_EQ(plan(request(StoreMode::kAppend, big), existing(40, big)).status,
            StoreStatus::kNotStored);
}

TEST(StorePlan, CasOnAbsentPresentAndMismatch) {
  StoreRequest r = request(StoreMode::kCas);
  r.compare_cas = 40;
  EXPECT_EQ(plan(r, std::nullopt).status, StoreStatus::kNotFound);
  expect_request_record(plan(r, existing(40)));
  EXPECT_EQ(plan(r, existing(41)).status, StoreStatus::kExists);
  r.compare_cas = 0;  // a cas of 0 never matches
  EXPECT_EQ(plan(r, existing(0)).status, StoreStatus::kExists);
}

TEST(StorePlan, CasWithInvalidateAndAnOlderCasStoresStale) {
  StoreRequest r = request(StoreMode::kCas);
  r.compare_cas = 39;
  r.invalidate = true;
  ExistingItem old = existing(40);
  old.bits = ItemHeader::kTokenSent | ItemHeader::kFetched;
  const StorePlan p = plan(r, old);
  EXPECT_EQ(p.status, StoreStatus::kStored);
  EXPECT_EQ(value_of(p.record), "new");
  EXPECT_EQ(p.record.exptime, old.exptime);  // keeps the old TTL
  EXPECT_EQ(p.record.bits, ItemHeader::kStale | ItemHeader::kTokenSent);
  r.compare_cas = 41;  // newer than the item's: refused
  EXPECT_EQ(plan(r, old).status, StoreStatus::kExists);
}

TEST(StorePlan, MetaSetWithACasUpgradesSetAndReplaceToCas) {
  for (const StoreMode mode : {StoreMode::kSet, StoreMode::kReplace}) {
    StoreRequest r = request(mode);
    r.compare_cas = 40;
    EXPECT_EQ(effective_mode(r), StoreMode::kCas);
    EXPECT_EQ(plan(r, existing(41)).status, StoreStatus::kExists);
    EXPECT_EQ(plan(r, std::nullopt).status, StoreStatus::kNotFound);
  }
  StoreRequest add = request(StoreMode::kAdd);
  add.compare_cas = 40;
  EXPECT_EQ(effective_mode(add), StoreMode::kAdd);
}

TEST(StorePlan, RecordTakesTheExplicitCasAndBinaryKey) {
  StoreRequest r = request(StoreMode::kSet);
  r.new_cas = 99;
  r.binary_key = true;
  const StorePlan p = plan(r, std::nullopt);
  EXPECT_EQ(p.record.cas, std::optional<std::uint64_t>(99));
  EXPECT_EQ(p.record.bits, ItemHeader::kKeyBinary);
  EXPECT_FALSE(plan(request(StoreMode::kSet), std::nullopt).record.cas.has_value());
}

}  // namespace
}  // namespace pmcached::engine

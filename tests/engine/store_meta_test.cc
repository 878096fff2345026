// Store: meta-protocol item states (mg W/X/Z, N, R, h/l), ms I and N, md I and x.
#include <gtest/gtest.h>

#include "engine/store/item.h"
#include "tests/engine/store_fixture.h"

namespace pmcached::engine::testing {
namespace {

GetRequest mg(std::string_view key) {
  GetRequest r;
  r.key = key;
  return r;
}

TEST_F(StoreTest, VivifyCreatesAnEmptyItemAndOnlyTheFirstClientWins) {
  GetRequest r = mg("hot");
  r.vivify_ttl = 30;
  auto [first, item] = fetch(r);
  EXPECT_EQ(first.status, StoreStatus::kHit);
  EXPECT_TRUE(first.vivified);
  EXPECT_TRUE(first.won);
  EXPECT_FALSE(first.token_sent);
  ASSERT_TRUE(item);
  EXPECT_EQ(item->value, "");
  EXPECT_EQ(item->exptime, kStart + 30);
  EXPECT_EQ(item->client_flags, 0u);
  auto [second, again] = fetch(r);
  EXPECT_EQ(second.status, StoreStatus::kHit);
  EXPECT_FALSE(second.vivified);
  EXPECT_FALSE(second.won);
  EXPECT_TRUE(second.token_sent);  // Z
  EXPECT_EQ(again->cas, item->cas);
  // The winner recaches with a plain set; the token state goes with the old item.
  ASSERT_EQ(set("hot", "fresh", 30), StoreStatus::kStored);
  auto [third, cached] = fetch(r);
  EXPECT_FALSE(third.won);
  EXPECT_FALSE(third.token_sent);
  EXPECT_EQ(cached->value, "fresh");
}

// The server shows mg's TTL against the reading the store served the get (and its touch) at.
TEST_F(StoreTest, AGetCarriesTheClockReadingItWasServedAt) {
  clock_.advance(3);
  EXPECT_EQ(fetch(mg("missing")).first.now, kStart + 3);
  ASSERT_EQ(set("k", "v"), StoreStatus::kStored);
  GetRequest r = mg("k");
  r.touch_exptime = 50;
  clock_.advance(1);
  auto [touched, item] = fetch(r);
  EXPECT_EQ(touched.now, kStart + 4);
  EXPECT_EQ(item->exptime, touched.now + 50);
}

TEST_F(StoreTest, VivifyUsesExplicitCas) {
  GetRequest r = mg("k");
  r.vivify_ttl = 10;
  r.new_cas = 4242;
  EXPECT_EQ(fetch(r).second->cas, 4242u);
}

TEST_F(StoreTest, RecacheWinsOnceWhenRemainingTtlIsBelowTheToken) {
  ASSERT_EQ(set("k", "v", 20), StoreStatus::kStored);
  ASSERT_EQ(set("forever", "v"), StoreStatus::kStored);
  GetRequest r = mg("k");
  r.recache_below = 10;
  EXPECT_FALSE(fetch(r).first.won) << "20s left is not below 10";
  r.recache_below = 30;
  auto [win, item] = fetch(r);
  EXPECT_TRUE(win.won);
  EXPECT_FALSE(win.token_sent);
  EXPECT_FALSE(item->win_token_sent);
  auto [later, seen] = fetch(r);
  EXPECT_FALSE(later.won);
  EXPECT_TRUE(later.token_sent);
  EXPECT_TRUE(seen->win_token_sent);
  r.key = "forever";
  EXPECT_FALSE(fetch(r).first.won) << "an item without expiry never wins by R";
}

TEST_F(StoreTest, MetaDeleteInvalidateMarksStaleAndTheNextReaderWins) {
  const std::uint64_t cas = put("k", "v", StoreMode::kSet, 0, 100).cas;
  DeleteRequest d;
  d.key = "k";
  d.invalidate = true;
  d.exptime = 30;
  EXPECT_EQ(store_->remove(d), StoreStatus::kDeleted);
  auto [first, item] = fetch(mg("k"));
  ASSERT_TRUE(item) << "invalidate keeps the item";
  EXPECT_TRUE(first.stale);  // X
  EXPECT_TRUE(first.won);    // W
  EXPECT_FALSE(first.token_sent);
  EXPECT_TRUE(item->stale);
  EXPECT_GT(item->cas, cas) << "invalidate bumps the cas";
  EXPECT_EQ(item->exptime, kStart + 30);
  EXPECT_EQ(item->value, "v");
  auto [second, again] = fetch(mg("k"));
  EXPECT_TRUE(second.stale);
  EXPECT_FALSE(second.won);
  EXPECT_TRUE(second.token_sent);  // Z
  // Invalidating again clears the token, so a new reader may win.
  EXPECT_EQ(store_->remove(d), StoreStatus::kDeleted);
  EXPECT_TRUE(fetch(mg("k")).first.won);
  EXPECT_EQ(store_->stats().delete_hits, 0u) << "memcached counts no delete hit for md I";
}

TEST_F(StoreTest, MetaDeleteInvalidateWithExplicitCas) {
  ASSERT_EQ(set("k", "v"), StoreStatus::kStored);
  DeleteRequest d;
  d.key = "k";
  d.invalidate = true;
  d.new_cas = 777;
  EXPECT_EQ(store_->remove(d), StoreStatus::kDeleted);
  EXPECT_EQ(get("k")->cas, 777u);
}

TEST_F(StoreTest, MetaSetInvalidateStoresAnOlderCasAsStale) {
  const std::uint64_t first = put("k", "v1", StoreMode::kSet, 0, 100).cas;
  const std::uint64_t second = put("k", "v2", StoreMode::kSet, 0, 100).cas;
  ASSERT_GT(second, first);
  // Without I an older cas is a plain mismatch.
  EXPECT_EQ(put("k", "old", StoreMode::kSet, 3, 5, first).status, StoreStatus::kExists);
  StoreRequest r;
  r.key = "k";
  r.value = "old";
  r.client_flags = 3;
  r.exptime = 5;
  r.compare_cas = first;
  r.invalidate = true;
  const StoreOutcome out = store_->store(r);
  EXPECT_EQ(out.status, StoreStatus::kStored);
  EXPECT_GT(out.cas, second);
  auto [outcome, item] = fetch(mg("k"));
  EXPECT_EQ(item->value, "old");
  EXPECT_EQ(item->client_flags, 3u);
  EXPECT_EQ(item->exptime, kStart + 100) << "a stale store keeps the old TTL";
  EXPECT_TRUE(outcome.stale);
  EXPECT_TRUE(outcome.won);
  // A newer cas than the item's is still a mismatch, even with I.
  r.compare_cas = out.cas + 10;
  EXPECT_EQ(store_->store(r).status, StoreStatus::kExists);
  // A stale store after a win keeps the token: the next reader gets Z, not W.
  r.compare_cas = 1;
  EXPECT_EQ(store_->store(r).status, StoreStatus::kStored);
  auto [after, seen] = fetch(mg("k"));
  EXPECT_TRUE(after.stale);
  EXPECT_TRUE(after.token_sent);
  EXPECT_FALSE(after.won);
}

TEST_F(StoreTest, MetaDeleteDropValueLeavesAnEmptyItem) {
  const std::uint64_t cas = put("k", "value", StoreMode::kSet, 9, 100).cas;
  DeleteRequest d;
  d.key = "k";
  d.drop_value = true;
  EXPECT_EQ(store_->remove(d), StoreStatus::kDeleted);
  auto item = get("k");
  ASSERT_TRUE(item);
  EXPECT_EQ(item->value, "");
  EXPECT_EQ(item->cas, cas) << "the tombstone keeps the cas unless E is given";
  d.new_cas = 31337;
  d.invalidate = true;
  EXPECT_EQ(store_->remove(d), StoreStatus::kDeleted);
  auto [outcome, stale] = fetch(mg("k"));
  EXPECT_EQ(stale->cas, 31337u);
  EXPECT_TRUE(outcome.stale);
  EXPECT_EQ(store_->stats().bytes, 96u);  // an empty record still takes a class-1 block
}

TEST_F(StoreTest, AppendVivifiesOnMissWithTheNTtl) {
  StoreRequest r;
  r.mode = StoreMode::kAppend;
  r.key = "log";
  r.value = "first";
  r.client_flags = 4;
  r.exptime = 999;
  r.vivify_ttl = 60;
  EXPECT_EQ(store_->store(r).status, StoreStatus::kStored);
  auto item = get("log");
  EXPECT_EQ(item->value, "first");
  EXPECT_EQ(item->exptime, kStart + 60);
  r.value = "+second";
  EXPECT_EQ(store_->store(r).status, StoreStatus::kStored);
  EXPECT_EQ(*value("log"), "first+second");
  r.mode = StoreMode::kPrepend;
  r.key = "other";
  EXPECT_EQ(store_->store(r).status, StoreStatus::kStored);
  EXPECT_EQ(*value("other"), "+second");
}

// The access time moves as memcached's does (do_item_update): only on a fetch that finds it more
// than ITEM_UPDATE_INTERVAL (60 s) old. memcached without its LRU maintainer (the fuzz reference)
// answers `mg k l` after a set, a get 10 s later and 0 s more with l10; it was l0 here before.
TEST_F(StoreTest, VisitorSeesFetchedAndLastAccessAsTheyWereBefore) {
  ASSERT_EQ(set("k", "v"), StoreStatus::kStored);
  clock_.advance(5);
  auto first = get("k");
  EXPECT_FALSE(first->fetched);
  EXPECT_EQ(first->last_access, kStart);
  clock_.advance(3);
  auto second = get("k");
  EXPECT_TRUE(second->fetched);
  EXPECT_EQ(second->last_access, kStart);  // the fetch at +5 was within 60 s
  clock_.advance(60);
  EXPECT_EQ(get("k")->last_access, kStart);  // 68 s old: this fetch moves it
  EXPECT_EQ(get("k")->last_access, kStart + 68);
}

TEST_F(StoreTest, TouchMovesTheAccessTimeAsAFetchDoes) {
  ASSERT_EQ(set("k", "v"), StoreStatus::kStored);
  clock_.advance(10);
  EXPECT_EQ(store_->touch("k", 0), StoreStatus::kTouched);
  EXPECT_EQ(get("k")->last_access, kStart);
  clock_.advance(61);
  EXPECT_EQ(store_->touch("k", 0), StoreStatus::kTouched);
  EXPECT_EQ(get("k")->last_access, kStart + 71);
}

TEST_F(StoreTest, NoBumpLeavesAccessStateAlone) {
  ASSERT_EQ(set("k", "v"), StoreStatus::kStored);
  clock_.advance(5);
  GetRequest r = mg("k");
  r.bump = false;
  EXPECT_FALSE(fetch(r).second->fetched);
  EXPECT_FALSE(fetch(r).second->fetched);
  EXPECT_EQ(fetch(r).second->last_access, kStart);
  EXPECT_FALSE(get("k")->fetched);
  EXPECT_TRUE(get("k")->fetched);
}

}  // namespace
}  // namespace pmcached::engine::testing

// Store: storage commands (set/add/replace/append/prepend/cas), delete, touch, sizes, stats.
#include <gtest/gtest.h>

#include "engine/store/item.h"
#include "tests/engine/store_fixture.h"

namespace pmcached::engine::testing {
namespace {

TEST_F(StoreTest, SetThenGetReturnsValueFlagsAndCasStartingAtOne) {
  const StoreOutcome first = put("k", "hello", StoreMode::kSet, 42);
  EXPECT_EQ(first.status, StoreStatus::kStored);
  EXPECT_EQ(first.cas, 1u);
  EXPECT_EQ(first.value_size, 5u);
  auto item = get("k");
  ASSERT_TRUE(item);
  EXPECT_EQ(item->key, "k");
  EXPECT_EQ(item->value, "hello");
  EXPECT_EQ(item->client_flags, 42u);
  EXPECT_EQ(item->cas, 1u);
  EXPECT_EQ(item->exptime, 0);
  EXPECT_EQ(put("k", "again").cas, 2u);
  EXPECT_EQ(put("other", "x").cas, 3u);
  EXPECT_EQ(*value("k"), "again");
}

TEST_F(StoreTest, EmptyValueAndBinaryValueRoundTrip) {
  EXPECT_EQ(set("empty", ""), StoreStatus::kStored);
  EXPECT_EQ(*value("empty"), "");
  const std::string binary("a\0b\r\n\xff", 6);
  EXPECT_EQ(set("bin", binary), StoreStatus::kStored);
  EXPECT_EQ(*value("bin"), binary);
}

TEST_F(StoreTest, AddStoresOnlyWhenAbsent) {
  EXPECT_EQ(put("k", "1", StoreMode::kAdd).status, StoreStatus::kStored);
  EXPECT_EQ(put("k", "2", StoreMode::kAdd).status, StoreStatus::kNotStored);
  EXPECT_EQ(*value("k"), "1");
}

TEST_F(StoreTest, ReplaceStoresOnlyWhenPresent) {
  EXPECT_EQ(put("k", "1", StoreMode::kReplace).status, StoreStatus::kNotStored);
  EXPECT_FALSE(get("k"));
  ASSERT_EQ(set("k", "1"), StoreStatus::kStored);
  EXPECT_EQ(put("k", "2", StoreMode::kReplace, 9).status, StoreStatus::kStored);
  EXPECT_EQ(get("k")->value, "2");
  EXPECT_EQ(get("k")->client_flags, 9u);
}

TEST_F(StoreTest, AppendAndPrependNeedAnItem) {
  EXPECT_EQ(put("k", "x", StoreMode::kAppend).status, StoreStatus::kNotStored);
  EXPECT_EQ(put("k", "x", StoreMode::kPrepend).status, StoreStatus::kNotStored);
  EXPECT_FALSE(get("k"));
}

TEST_F(StoreTest, AppendAndPrependKeepFlagsAndExptimeAndGetNewCas) {
  const StoreOutcome base = put("k", "mid", StoreMode::kSet, 7, 100);
  const StoreOutcome appended = put("k", "END", StoreMode::kAppend, 99, 5);
  EXPECT_EQ(appended.status, StoreStatus::kStored);
  EXPECT_EQ(appended.value_size, 6u);
  EXPECT_GT(appended.cas, base.cas);
  const StoreOutcome prepended = put("k", "go", StoreMode::kPrepend, 98, 1);
  EXPECT_EQ(prepended.value_size, 8u);
  auto item = get("k");
  ASSERT_TRUE(item);
  EXPECT_EQ(item->value, "gomidEND");
  EXPECT_EQ(item->client_flags, 7u);
  EXPECT_EQ(item->exptime, kStart + 100);
  EXPECT_EQ(item->cas, prepended.cas);
}

TEST_F(StoreTest, CasResults) {
  EXPECT_EQ(put("k", "v", StoreMode::kCas, 0, 0, 1).status, StoreStatus::kNotFound);
  const std::uint64_t cas = put("k", "v").cas;
  EXPECT_EQ(put("k", "w", StoreMode::kCas, 0, 0, cas + 1).status, StoreStatus::kExists);
  EXPECT_EQ(put("k", "w", StoreMode::kCas, 0, 0, 0).status, StoreStatus::kExists);  // `cas k .. 0`
  const StoreOutcome ok = put("k", "w", StoreMode::kCas, 3, 0, cas);
  EXPECT_EQ(ok.status, StoreStatus::kStored);
  EXPECT_EQ(*value("k"), "w");
  EXPECT_EQ(put("k", "x", StoreMode::kCas, 0, 0, cas).status, StoreStatus::kExists);  // stale token
  const StoreStats s = store_->stats();
  EXPECT_EQ(s.cas_misses, 1u);
  EXPECT_EQ(s.cas_badval, 3u);
  EXPECT_EQ(s.cas_hits, 1u);
}

TEST_F(StoreTest, MetaCompareCasAppliesToEveryMode) {
  // ms C: set and replace behave as cas; append/prepend check too; add ignores it.
  EXPECT_EQ(put("k", "v", StoreMode::kSet, 0, 0, 5).status, StoreStatus::kNotFound);
  EXPECT_EQ(put("k", "v", StoreMode::kReplace, 0, 0, 5).status, StoreStatus::kNotFound);
  const std::uint64_t cas = put("k", "v").cas;
  EXPECT_EQ(put("k", "x", StoreMode::kSet, 0, 0, cas + 9).status, StoreStatus::kExists);
  EXPECT_EQ(put("k", "x", StoreMode::kAppend, 0, 0, cas + 9).status, StoreStatus::kExists);
  EXPECT_EQ(put("k", "x", StoreMode::kPrepend, 0, 0, cas + 9).status, StoreStatus::kExists);
  EXPECT_EQ(put("k", "x", StoreMode::kAdd, 0, 0, cas).status, StoreStatus::kNotStored);
  const StoreOutcome appended = put("k", "+", StoreMode::kAppend, 0, 0, cas);
  EXPECT_EQ(appended.status, StoreStatus::kStored);
  EXPECT_EQ(put("k", "y", StoreMode::kReplace, 0, 0, appended.cas).status, StoreStatus::kStored);
  EXPECT_EQ(*value("k"), "y");
  EXPECT_EQ(put("new", "n", StoreMode::kAdd, 0, 0, 77).status, StoreStatus::kStored);
}

TEST_F(StoreTest, ExplicitNewCasFromMetaE) {
  StoreRequest r;
  r.key = "k";
  r.value = "v";
  r.new_cas = 9000;
  const StoreOutcome out = store_->store(r);
  EXPECT_EQ(out.cas, 9000u);
  EXPECT_EQ(get("k")->cas, 9000u);
  EXPECT_EQ(put("k", "w", StoreMode::kCas, 0, 0, 9000).status, StoreStatus::kStored);
  EXPECT_EQ(get("k")->cas, 1u);  // the counter was not advanced by E
}

TEST_F(StoreTest, ItemSizeLimitFollowsMemcachedFormula) {
  StoreOptions options;
  options.item_size_max = 1024;
  reopen(options);
  // 48 + 8 + key + 1 + value + 2 (+4 with non-zero flags) <= item_size_max.
  const std::size_t fits = 1024 - 48 - 8 - 1 - 1 - 2;
  EXPECT_EQ(put("k", std::string(fits, 'x')).status, StoreStatus::kStored);
  EXPECT_EQ(put("k", std::string(fits + 1, 'x')).status, StoreStatus::kTooLarge);
  EXPECT_FALSE(get("k")) << "a set that is too large drops the old value";
  EXPECT_EQ(put("k", std::string(fits, 'x'), StoreMode::kSet, 1).status, StoreStatus::kTooLarge);
  EXPECT_EQ(put("k", std::string(fits - 4, 'x'), StoreMode::kSet, 1).status, StoreStatus::kStored);
  EXPECT_EQ(put("k", std::string(fits + 1, 'x'), StoreMode::kAdd).status, StoreStatus::kTooLarge);
  EXPECT_TRUE(get("k")) << "add/replace failures keep the old value";
  // An append whose result is too large is NOT_STORED, as in memcached.
  EXPECT_EQ(put("k", "yyyyy", StoreMode::kAppend).status, StoreStatus::kNotStored);
  EXPECT_EQ(get("k")->value.size(), fits - 4);
}

TEST_F(StoreTest, InvalidKeysAreRejected) {
  EXPECT_EQ(set("", "v"), StoreStatus::kNotStored);
  EXPECT_EQ(set(std::string(251, 'k'), "v"), StoreStatus::kNotStored);
  EXPECT_EQ(set(std::string(250, 'k'), "v"), StoreStatus::kStored);
  EXPECT_EQ(*value(std::string(250, 'k')), "v");
  EXPECT_FALSE(get(""));
}

TEST_F(StoreTest, DeleteHitsAndMisses) {
  DeleteRequest d;
  d.key = "k";
  EXPECT_EQ(store_->remove(d), StoreStatus::kNotFound);
  ASSERT_EQ(set("k", "v"), StoreStatus::kStored);
  EXPECT_EQ(store_->remove(d), StoreStatus::kDeleted);
  EXPECT_FALSE(get("k"));
  EXPECT_EQ(store_->remove(d), StoreStatus::kNotFound);
  const StoreStats s = store_->stats();
  EXPECT_EQ(s.delete_hits, 1u);
  EXPECT_EQ(s.delete_misses, 2u);
  EXPECT_EQ(s.curr_items, 0u);
  EXPECT_EQ(s.bytes, 0u);
}

TEST_F(StoreTest, DeleteWithCompareCas) {
  const std::uint64_t cas = put("k", "v").cas;
  DeleteRequest d;
  d.key = "k";
  d.compare_cas = cas + 1;
  EXPECT_EQ(store_->remove(d), StoreStatus::kExists);
  EXPECT_TRUE(get("k"));
  d.compare_cas = cas;
  EXPECT_EQ(store_->remove(d), StoreStatus::kDeleted);
  EXPECT_FALSE(get("k"));
}

TEST_F(StoreTest, TouchChangesExpiry) {
  EXPECT_EQ(store_->touch("k", 10), StoreStatus::kNotFound);
  ASSERT_EQ(set("k", "v", 10), StoreStatus::kStored);
  EXPECT_EQ(store_->touch("k", 100), StoreStatus::kTouched);
  EXPECT_EQ(get("k")->exptime, kStart + 100);
  clock_.advance(50);
  EXPECT_TRUE(get("k"));
  EXPECT_EQ(store_->touch("k", 0), StoreStatus::kTouched);
  clock_.advance(1000);
  EXPECT_TRUE(get("k"));
  EXPECT_EQ(store_->touch("k", -1), StoreStatus::kTouched);
  EXPECT_FALSE(get("k"));
  const StoreStats s = store_->stats();
  EXPECT_EQ(s.cmd_touch, 4u);
  EXPECT_EQ(s.touch_hits, 3u);
  EXPECT_EQ(s.touch_misses, 1u);
}

TEST_F(StoreTest, GetAndTouchUpdatesExpiryAndCountsAsTouch) {
  ASSERT_EQ(set("k", "v", 10), StoreStatus::kStored);
  GetRequest r;
  r.key = "k";
  r.touch_exptime = 500;
  auto [outcome, item] = fetch(r);
  EXPECT_EQ(outcome.status, StoreStatus::kHit);
  EXPECT_EQ(item->exptime, kStart + 500) << "the visitor sees the item after the touch";
  r.key = "missing";
  EXPECT_EQ(fetch(r).first.status, StoreStatus::kNotFound);
  const StoreStats s = store_->stats();
  EXPECT_EQ(s.cmd_touch, 2u);
  EXPECT_EQ(s.touch_hits, 1u);
  EXPECT_EQ(s.touch_misses, 1u);
  EXPECT_EQ(s.cmd_get, 2u);
  EXPECT_EQ(s.get_hits, 0u);
}

TEST_F(StoreTest, GetAndTouchWithoutCountGetCountsOnlyTheTouch) {
  ASSERT_EQ(set("k", "v", 10), StoreStatus::kStored);
  GetRequest r;
  r.key = "k";
  r.touch_exptime = 500;
  r.count_get = false;  // memcached's gat and binary touch
  EXPECT_EQ(fetch(r).first.status, StoreStatus::kHit);
  const StoreStats s = store_->stats();
  EXPECT_EQ(s.cmd_touch, 1u);
  EXPECT_EQ(s.touch_hits, 1u);
  EXPECT_EQ(s.cmd_get, 0u);
}

TEST_F(StoreTest, MetaGetWithTouchCountsAHitAsATouchAndAMissAsAGetMiss) {
  ASSERT_EQ(set("k", "v"), StoreStatus::kStored);
  GetRequest r;
  r.touch_exptime = 500;
  r.count_get = false;
  r.touch_miss_is_get_miss = true;  // memcached's mg with T
  r.key = "k";
  EXPECT_EQ(fetch(r).first.status, StoreStatus::kHit);
  r.key = "missing";
  EXPECT_EQ(fetch(r).first.status, StoreStatus::kNotFound);
  const StoreStats s = store_->stats();
  EXPECT_EQ(s.cmd_touch, 1u);
  EXPECT_EQ(s.touch_hits, 1u);
  EXPECT_EQ(s.touch_misses, 0u);
  EXPECT_EQ(s.cmd_get, 1u);
  EXPECT_EQ(s.get_misses, 1u);
}

TEST_F(StoreTest, AnIncrThatDoesNotLengthenTheNumberIsNoNewItem) {
  ASSERT_EQ(set("n", "15"), StoreStatus::kStored);
  ArithmeticRequest r;
  r.key = "n";
  r.delta = 1;
  EXPECT_EQ(store_->arithmetic(r).value, 16u);  // rewritten in place by memcached
  EXPECT_EQ(store_->stats().total_items, 1u);
  r.delta = 100;
  EXPECT_EQ(store_->arithmetic(r).value, 116u);  // longer: a new item
  EXPECT_EQ(store_->stats().total_items, 2u);
}

TEST_F(StoreTest, ADeleteCasMismatchCountsAMissOnlyWhenAsked) {
  ASSERT_EQ(set("d", "x"), StoreStatus::kStored);
  DeleteRequest r;
  r.key = "d";
  r.compare_cas = 999999;
  r.count_cas_mismatch = false;  // a binary DELETE
  EXPECT_EQ(store_->remove(r), StoreStatus::kExists);
  EXPECT_EQ(store_->stats().delete_misses, 0u);
  r.count_cas_mismatch = true;  // md
  EXPECT_EQ(store_->remove(r), StoreStatus::kExists);
  EXPECT_EQ(store_->stats().delete_misses, 1u);
}

TEST_F(StoreTest, StatsCountItemsBytesAndCommands) {
  ASSERT_EQ(set("a", "12345"), StoreStatus::kStored);
  ASSERT_EQ(set("bb", "1"), StoreStatus::kStored);
  ASSERT_EQ(set("a", "123"), StoreStatus::kStored);
  EXPECT_TRUE(get("a"));
  EXPECT_FALSE(get("zz"));
  StoreStats s = store_->stats();
  EXPECT_EQ(s.curr_items, 2u);
  EXPECT_EQ(s.total_items, 3u);
  EXPECT_EQ(s.cmd_set, 3u);
  EXPECT_EQ(s.cmd_get, 2u);
  EXPECT_EQ(s.get_hits, 1u);
  EXPECT_EQ(s.get_misses, 1u);
  // Each record takes a block of class 1 (96 bytes; memcached's ntotal is 63 and 62).
  EXPECT_EQ(s.bytes, 2 * 96u);
  EXPECT_EQ(s.limit_maxbytes, StoreOptions{}.memory_limit_bytes);
  store_->reset_stats();
  s = store_->stats();
  EXPECT_EQ(s.curr_items, 2u) << "reset keeps the current state";
  EXPECT_EQ(s.bytes, 2 * 96u);
  EXPECT_EQ(s.total_items, 0u);
  EXPECT_EQ(s.cmd_set, 0u);
  EXPECT_EQ(s.get_hits, 0u);
}

TEST_F(StoreTest, EngineReflectsTheStore) {
  ASSERT_EQ(set("a", "1"), StoreStatus::kStored);
  ASSERT_EQ(set("b", "2"), StoreStatus::kStored);
  EXPECT_EQ(store_->engine().size(), 2u);
  EXPECT_EQ(store_->engine().name(), "dram");
  std::vector<std::string> keys;
  store_->engine().scan("", [&](std::string_view key, ItemRef ref) {
    EXPECT_EQ(store_->engine().lookup(key), ref);
    keys.emplace_back(key);
    return true;
  });
  EXPECT_EQ(keys, (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace pmcached::engine::testing

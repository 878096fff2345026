// Store: incr/decr/ma, with memcached 1.6.18's number parsing and in-place length rule.
#include <gtest/gtest.h>

#include "tests/engine/store_fixture.h"

namespace pmcached::engine::testing {
namespace {

class ArithmeticTest : public StoreTest {
 protected:
  ArithmeticOutcome incr(std::string_view key, std::uint64_t delta = 1) {
    ArithmeticRequest r;
    r.key = key;
    r.delta = delta;
    return store_->arithmetic(r);
  }
  ArithmeticOutcome decr(std::string_view key, std::uint64_t delta = 1) {
    ArithmeticRequest r;
    r.key = key;
    r.mode = ArithmeticMode::kDecr;
    r.delta = delta;
    return store_->arithmetic(r);
  }
};

TEST_F(ArithmeticTest, IncrementKeepsFlagsAndExptimeWithANewCas) {
  const StoreOutcome base = put("n", "41", StoreMode::kSet, 5, 100);
  const ArithmeticOutcome out = incr("n");
  EXPECT_EQ(out.status, StoreStatus::kStored);
  EXPECT_EQ(out.value, 42u);
  EXPECT_GT(out.cas, base.cas);
  EXPECT_EQ(out.exptime, kStart + 100);
  auto item = get("n");
  EXPECT_EQ(item->value, "42");
  EXPECT_EQ(item->client_flags, 5u);
  EXPECT_EQ(item->cas, out.cas);
  EXPECT_EQ(item->exptime, kStart + 100);
  EXPECT_EQ(store_->stats().incr_hits, 1u);
}

TEST_F(ArithmeticTest, IncrementWrapsAtTwoToTheSixtyFour) {
  ASSERT_EQ(set("n", "18446744073709551615"), StoreStatus::kStored);
  EXPECT_EQ(incr("n").value, 0u);
  // memcached rewrites a number that got shorter in place, padded with spaces.
  EXPECT_EQ(*value("n"), "0" + std::string(19, ' '));
  EXPECT_EQ(incr("n", 5).value, 5u);
}

TEST_F(ArithmeticTest, DecrementFloorsAtZero) {
  ASSERT_EQ(set("n", "5"), StoreStatus::kStored);
  EXPECT_EQ(decr("n", 100).value, 0u);
  EXPECT_EQ(*value("n"), "0");
  EXPECT_EQ(decr("n").value, 0u);
  EXPECT_EQ(store_->stats().decr_hits, 2u);
}

TEST_F(ArithmeticTest, ShorterResultIsSpacePaddedLongerResultIsExact) {
  ASSERT_EQ(set("n", "10"), StoreStatus::kStored);
  EXPECT_EQ(decr("n").value, 9u);
  EXPECT_EQ(*value("n"), "9 ");  // `set a 0 0 2 / 10 / decr a 1 / get a` on memcached 1.6.18
  EXPECT_EQ(incr("n", 5).value, 14u);
  EXPECT_EQ(*value("n"), "14");
  EXPECT_EQ(incr("n", 86).value, 100u);
  EXPECT_EQ(*value("n"), "100");
}

TEST_F(ArithmeticTest, ParsesNumbersLikeMemcachedSafeStrtoull) {
  const std::pair<const char*, std::uint64_t> numeric[] = {
      {" 12", 13}, {"12 abc", 13}, {"+5", 6}, {"007", 8}, {"0000000000000000000000001", 2}};
  for (const auto& [text, expected] : numeric) {
    ASSERT_EQ(set("n", text), StoreStatus::kStored);
    const ArithmeticOutcome out = incr("n");
    EXPECT_EQ(out.status, StoreStatus::kStored) << text;
    EXPECT_EQ(out.value, expected) << text;
  }
  for (const char* text : {"", "abc", "12a", "-5", "18446744073709551616", " ", "-"}) {
    ASSERT_EQ(set("n", text), StoreStatus::kStored);
    EXPECT_EQ(incr("n").status, StoreStatus::kNonNumeric) << '"' << text << '"';
    EXPECT_EQ(*value("n"), text) << "a failed incr changes nothing";
  }
}

TEST_F(ArithmeticTest, MissCountsAndVivifyCreatesTheInitialValue) {
  EXPECT_EQ(incr("n").status, StoreStatus::kNotFound);
  EXPECT_EQ(decr("n").status, StoreStatus::kNotFound);
  EXPECT_EQ(store_->stats().incr_misses, 1u);
  EXPECT_EQ(store_->stats().decr_misses, 1u);
  ArithmeticRequest r;
  r.key = "n";
  r.vivify_ttl = 60;
  r.initial = 77;
  r.delta = 3;
  const ArithmeticOutcome created = store_->arithmetic(r);
  EXPECT_EQ(created.status, StoreStatus::kStored);
  EXPECT_EQ(created.value, 77u) << "a vivified counter starts at J, the delta is not applied";
  EXPECT_EQ(created.exptime, kStart + 60);
  auto item = get("n");
  EXPECT_EQ(item->value, "77");
  EXPECT_EQ(item->cas, created.cas);
  EXPECT_EQ(store_->arithmetic(r).value, 80u);
}

// The server shows a TTL against the reading the store served the request at (one clock
// reading per command, as memcached): every outcome carries it, created, updated or missed.
TEST_F(ArithmeticTest, EveryOutcomeCarriesTheClockReadingItWasServedAt) {
  clock_.advance(7);
  EXPECT_EQ(incr("missing").now, kStart + 7);
  ArithmeticRequest r;
  r.key = "n";
  r.vivify_ttl = 60;
  EXPECT_EQ(store_->arithmetic(r).now, kStart + 7) << "created";
  clock_.advance(1);
  EXPECT_EQ(store_->arithmetic(r).now, kStart + 8) << "updated";
  put("text", "abc");
  EXPECT_EQ(incr("text").now, kStart + 8) << "non-numeric";
}

TEST_F(ArithmeticTest, CompareCasNewCasAndTouch) {
  const std::uint64_t cas = put("n", "1").cas;
  ArithmeticRequest r;
  r.key = "n";
  r.compare_cas = cas + 1;
  EXPECT_EQ(store_->arithmetic(r).status, StoreStatus::kExists);
  EXPECT_EQ(*value("n"), "1");
  r.compare_cas = cas;
  r.new_cas = 5555;
  r.touch_exptime = 30;
  const ArithmeticOutcome out = store_->arithmetic(r);
  EXPECT_EQ(out.status, StoreStatus::kStored);
  EXPECT_EQ(out.value, 2u);
  EXPECT_EQ(out.cas, 5555u);
  EXPECT_EQ(out.exptime, kStart + 30);
  EXPECT_EQ(get("n")->cas, 5555u);
  EXPECT_EQ(get("n")->exptime, kStart + 30);
}

}  // namespace
}  // namespace pmcached::engine::testing

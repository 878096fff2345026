// The IndexEngine interface over every registered engine, in three engine suites
// (engine_suites.h): `all` (EngineTest), `ordered` (OrderedEngineTest: engines whose capabilities
// say ordered) and `concurrent` (ConcurrentEngineTest), each instantiated over the registry
// filtered by capability, so a new engine joins them by being registered.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine/engine_registry.h"
#include "tests/engine/engine_suites.h"

namespace pmcached::engine {
namespace {

// "prefix<n>" (std::string operator+ trips a g++ 12 -Wrestrict false positive at -O3).
std::string numbered(const char* prefix, unsigned long n) {
  std::string s(prefix);
  s.append(std::to_string(n));
  return s;
}

// The dram engine without its hash index (EngineContext::hash_index), as bench/index_bench makes
// it: a parameter of the fixtures below, instantiated outside the engine suites.
constexpr std::string_view kDramTreeOnly = "dram_tree_only";

// Items for the engine: each ref points at a stored std::string holding its key, so engines
// that compare keys through EngineContext::key_of work too. The parameter is a registered
// engine's name, or kDramTreeOnly.
class EngineTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    EngineContext context;
    context.key_of = [](ItemRef ref) {
      return std::string_view(*reinterpret_cast<const std::string*>(ref));
    };
    const bool tree_only = GetParam() == kDramTreeOnly;
    if (tree_only) context.hash_index = false;
    name_ = tree_only ? std::string("dram") : GetParam();
    const EngineInfo* info = find_engine(name_);
    ASSERT_NE(info, nullptr);
    engine_ = info->create(context);
    ASSERT_NE(engine_, nullptr);
  }

  ItemRef ref_for(std::string key) {
    keys_.push_back(std::move(key));
    return reinterpret_cast<ItemRef>(&keys_.back());
  }
  static std::string_view key_of(ItemRef ref) { return *reinterpret_cast<const std::string*>(ref); }
  std::vector<std::string> scan_keys(std::string_view from, std::size_t limit = SIZE_MAX) {
    std::vector<std::string> out;
    engine_->scan(from, [&](std::string_view key, ItemRef ref) {
      EXPECT_EQ(key, key_of(ref));
      out.emplace_back(key);
      return out.size() < limit;
    });
    return out;
  }
  // The engine holds exactly `model`: its size, every lookup and, if ordered, a full scan with
  // each key's present reference (not one it replaced).
  void expect_matches(const std::map<std::string, ItemRef>& model) {
    ASSERT_EQ(engine_->size(), model.size());
    for (const auto& [key, ref] : model) EXPECT_EQ(engine_->lookup(key), ref);
    if (engine_->capabilities().ordered) {
      const std::vector<std::pair<std::string, ItemRef>> expected(model.begin(), model.end());
      std::vector<std::pair<std::string, ItemRef>> scanned;
      engine_->scan("", [&](std::string_view key, ItemRef ref) {
        scanned.emplace_back(key, ref);
        return true;
      });
      EXPECT_EQ(scanned, expected);
    }
  }
  static std::string be64(std::uint64_t v) {
    std::string s(8, '\0');
    for (int i = 7; i >= 0; --i, v >>= 8) s[static_cast<std::size_t>(i)] = static_cast<char>(v);
    return s;
  }

  std::string name_;              // the engine's registered name
  std::deque<std::string> keys_;  // stable addresses
  std::unique_ptr<IndexEngine> engine_;
};

// The same fixture, for the cases that need a capability (instantiated in that capability's group).
class OrderedEngineTest : public EngineTest {};
class ConcurrentEngineTest : public EngineTest {};

// upsert_batch() does what the same upserts one after the other do: statuses, the references
// replaced, and the mapping after; in batches larger than an engine's own groups.
TEST_P(EngineTest, UpsertBatchActsAsTheUpsertsInOrder) {
  std::map<std::string, ItemRef> model;
  for (unsigned long i = 0; i < 100; i += 2) {
    const std::string key = numbered("batch:", i);
    model[key] = ref_for(key);
    ASSERT_EQ(engine_->upsert(key, model[key]).status, UpsertStatus::kInserted);
  }
  // 70 distinct keys: the even ones below 100 are there (replaced), the rest are new.
  std::vector<BatchUpsert> batch;
  std::map<std::string, ItemRef> expected_previous;
  for (unsigned long i = 30; i < 100; ++i) {
    const std::string key = numbered("batch:", i);
    expected_previous[key] = model.contains(key) ? model[key] : kNoItem;
    const ItemRef ref = ref_for(key);
    batch.push_back({key_of(ref), ref});
    model[key] = ref;
  }
  engine_->upsert_batch(batch);
  for (const BatchUpsert& entry : batch) {
    const ItemRef previous = expected_previous.at(std::string(entry.key));
    EXPECT_EQ(entry.result.status,
              previous == kNoItem ? UpsertStatus::kInserted : UpsertStatus::kReplaced);
    EXPECT_EQ(entry.result.previous, previous);
  }
  expect_matches(model);
}

TEST_P(EngineTest, NameAndStatsIdentifyTheEngine) {
  EXPECT_EQ(engine_->name(), name_);
  const std::vector<EngineStat> stats = engine_->stats();
  ASSERT_FALSE(stats.empty());
  EXPECT_EQ(stats[0].name, "engine");
  EXPECT_EQ(stats[0].value, name_);
  EXPECT_EQ(find_engine(name_)->persistent, engine_->capabilities().persistent);
}

TEST_P(EngineTest, InsertReplaceLookupErase) {
  const ItemRef a1 = ref_for("alpha");
  const ItemRef a2 = ref_for("alpha");
  EXPECT_EQ(engine_->lookup("alpha"), kNoItem);
  UpsertResult r = engine_->upsert("alpha", a1);
  EXPECT_EQ(r.status, UpsertStatus::kInserted);
  EXPECT_EQ(r.previous, kNoItem);
  EXPECT_EQ(engine_->lookup("alpha"), a1);
  r = engine_->upsert("alpha", a2);
  EXPECT_EQ(r.status, UpsertStatus::kReplaced);
  EXPECT_EQ(r.previous, a1);
  EXPECT_EQ(engine_->lookup("alpha"), a2);
  EXPECT_EQ(engine_->size(), 1u);
  EXPECT_EQ(engine_->erase("alpha"), a2);
  EXPECT_EQ(engine_->erase("alpha"), kNoItem);
  EXPECT_EQ(engine_->lookup("alpha"), kNoItem);
  EXPECT_EQ(engine_->size(), 0u);
}

TEST_P(EngineTest, KeysThatArePrefixesOfOtherKeys) {
  for (const char* k : {"abc", "a", "ab", "b", "abcd"}) {
    ASSERT_EQ(engine_->upsert(k, ref_for(k)).status, UpsertStatus::kInserted);
  }
  EXPECT_EQ(engine_->size(), 5u);
  for (const char* k : {"a", "ab", "abc", "abcd", "b"}) EXPECT_EQ(key_of(engine_->lookup(k)), k);
  EXPECT_EQ(engine_->lookup("abcde"), kNoItem);
  EXPECT_EQ(engine_->lookup("aa"), kNoItem);
  EXPECT_NE(engine_->erase("ab"), kNoItem);
  EXPECT_EQ(engine_->lookup("ab"), kNoItem);
  EXPECT_EQ(key_of(engine_->lookup("a")), "a");
  EXPECT_EQ(key_of(engine_->lookup("abc")), "abc");
  if (engine_->capabilities().ordered) {
    EXPECT_EQ(scan_keys(""), (std::vector<std::string>{"a", "abc", "abcd", "b"}));
  }
}

TEST_P(EngineTest, LongAndBinaryKeys) {
  std::vector<std::string> keys;
  for (char last : {'\0', 'a', '\x7f', '\xff'}) {
    std::string k(249, 'k');
    k.push_back(last);
    keys.push_back(k);
  }
  keys.push_back(std::string(250, '\xff'));
  keys.push_back(std::string("\0\0", 2));
  keys.push_back(std::string("\0", 1));
  for (const std::string& k : keys) {
    ASSERT_EQ(engine_->upsert(k, ref_for(k)).status, UpsertStatus::kInserted);
  }
  for (const std::string& k : keys) EXPECT_EQ(key_of(engine_->lookup(k)), k);
  EXPECT_EQ(engine_->lookup(std::string(249, 'k')), kNoItem);
  if (engine_->capabilities().ordered) {
    std::vector<std::string> sorted = keys;
    std::sort(sorted.begin(), sorted.end());  // std::string compares as unsigned bytes
    EXPECT_EQ(scan_keys(""), sorted);
  }
}

TEST_P(OrderedEngineTest, ScanIsOrderedStartsAtFromAndStops) {
  if (!engine_->capabilities().ordered) GTEST_SKIP() << "engine is not ordered";
  std::vector<std::uint64_t> numbers(1000);
  for (std::size_t i = 0; i < numbers.size(); ++i) numbers[i] = i * 3;  // multiples of 3
  std::mt19937_64 rng(42);
  std::shuffle(numbers.begin(), numbers.end(), rng);
  for (std::uint64_t n : numbers)
    ASSERT_EQ(engine_->upsert(be64(n), ref_for(be64(n))).status, UpsertStatus::kInserted);
  const std::vector<std::string> all = scan_keys("");
  ASSERT_EQ(all.size(), 1000u);
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], be64(i * 3));
  // From a present key, from an absent key (between 300 and 303), stopping after 5.
  EXPECT_EQ(scan_keys(be64(300), 2), (std::vector<std::string>{be64(300), be64(303)}));
  EXPECT_EQ(scan_keys(be64(301), 5).front(), be64(303));
  EXPECT_EQ(scan_keys(be64(301), 5).size(), 5u);
  EXPECT_TRUE(scan_keys(be64(5000)).empty());
}

TEST_P(EngineTest, RandomOperationsMatchAStdMapModel) {
  std::map<std::string, ItemRef> model;
  std::mt19937 rng(7);
  for (int i = 0; i < 5000; ++i) {
    const std::string key = numbered("k", rng() % 300);
    switch (rng() % 3) {
      case 0:
      case 1: {
        const ItemRef ref = ref_for(key);
        const UpsertResult r = engine_->upsert(key, ref);
        const auto it = model.find(key);
        ASSERT_EQ(r.status, it == model.end() ? UpsertStatus::kInserted : UpsertStatus::kReplaced);
        ASSERT_EQ(r.previous, it == model.end() ? kNoItem : it->second);
        model[key] = ref;
        break;
      }
      default: {
        const auto it = model.find(key);
        ASSERT_EQ(engine_->erase(key), it == model.end() ? kNoItem : it->second);
        if (it != model.end()) model.erase(it);
      }
    }
  }
  expect_matches(model);
}

// Keys that share long prefixes and differ only around the lengths where engines keep part of a
// key inline (the dram engine's 23-byte head, key heads, radix chunks): zero bytes, 0xff bytes,
// proper prefixes, lengths 1-40. Every lookup, erase and the order of a scan match a std::map.
TEST_P(EngineTest, KeysDifferingOnlyNearAFixedPrefixLengthMatchAStdMapModel) {
  std::map<std::string, ItemRef> model;
  std::mt19937 rng(23);
  const std::string stem = "mykey_rand000000000000000000000000000000";
  const char tails[] = {'\0', '\x01', '0', '9', 'a', '\x7f', '\x80', '\xff'};
  auto random_key = [&] {
    std::string key = stem.substr(0, 1 + rng() % 40);
    // Change one or two bytes near the end (or anywhere, now and then).
    for (int changes = 1 + static_cast<int>(rng() % 2); changes > 0; --changes) {
      const std::size_t from = rng() % 4 == 0 ? 0 : key.size() > 4 ? key.size() - 4 : 0;
      const std::size_t at = from + rng() % (key.size() - from);
      key[at] = tails[rng() % sizeof tails];
    }
    return key;
  };
  for (int i = 0; i < 20000; ++i) {
    const std::string key = random_key();
    if (rng() % 4 != 0) {
      const ItemRef ref = ref_for(key);
      const UpsertResult r = engine_->upsert(key, ref);
      const auto it = model.find(key);
      ASSERT_EQ(r.status, it == model.end() ? UpsertStatus::kInserted : UpsertStatus::kReplaced)
          << testing::PrintToString(key);
      ASSERT_EQ(r.previous, it == model.end() ? kNoItem : it->second);
      model[key] = ref;
    } else {
      const auto it = model.find(key);
      ASSERT_EQ(engine_->erase(key), it == model.end() ? kNoItem : it->second)
          << testing::PrintToString(key);
      if (it != model.end()) model.erase(it);
    }
    const std::string probe = random_key();
    const auto it = model.find(probe);
    ASSERT_EQ(engine_->lookup(probe), it == model.end() ? kNoItem : it->second)
        << testing::PrintToString(probe);
  }
  expect_matches(model);
}

TEST_P(ConcurrentEngineTest, ConcurrentUpsertsFromTwoThreads) {
  if (!engine_->capabilities().concurrent) GTEST_SKIP() << "engine is not concurrent";
  constexpr unsigned long kPerThread = 5000;
  // Prepare refs up front (keys_ is not thread-safe); shared keys are written by both.
  std::vector<std::vector<std::pair<std::string, ItemRef>>> work(2);
  for (int t = 0; t < 2; ++t) {
    for (unsigned long i = 0; i < kPerThread; ++i) {
      const std::string key =
          (i % 10 == 0) ? numbered("shared", i) : numbered(t == 0 ? "t0-" : "t1-", i);
      work[static_cast<std::size_t>(t)].emplace_back(key, ref_for(key));
    }
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (const auto& [key, ref] : work[static_cast<std::size_t>(t)]) {
        const UpsertResult r = engine_->upsert(key, ref);
        EXPECT_NE(r.status, UpsertStatus::kOutOfMemory);
        EXPECT_NE(engine_->lookup(key), kNoItem);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const std::size_t shared = kPerThread / 10;
  EXPECT_EQ(engine_->size(), 2 * (kPerThread - shared) + shared);
  for (const auto& list : work) {
    for (const auto& [key, ref] : list) EXPECT_EQ(key_of(engine_->lookup(key)), key);
  }
}

INSTANTIATE_ENGINE_SUITE(all, EngineTest);
INSTANTIATE_ENGINE_SUITE(ordered, OrderedEngineTest);
INSTANTIATE_ENGINE_SUITE(concurrent, ConcurrentEngineTest);
INSTANTIATE_TEST_SUITE_P(dram_tree_only, EngineTest, ::testing::Values(std::string(kDramTreeOnly)));
INSTANTIATE_TEST_SUITE_P(dram_tree_only, OrderedEngineTest,
                         ::testing::Values(std::string(kDramTreeOnly)));
INSTANTIATE_TEST_SUITE_P(dram_tree_only, ConcurrentEngineTest,
                         ::testing::Values(std::string(kDramTreeOnly)));

// The dram engine's hash index over enough keys that each of its tables grows several times
// (rehashing what it holds) and shrinks by erases, with keys whose 23-byte heads tie: every
// lookup, every upsert's result and a scan of every key's present reference match a std::map.
// (The fixture, instantiated for dram alone, outside the engine suites.)
class DramEngineTest : public EngineTest {};

TEST_P(DramEngineTest, HashIndexThroughGrowthReplacesAndErasesMatchesAStdMapModel) {
  std::map<std::string, ItemRef> model;
  std::mt19937 rng(47);
  const auto random_key = [&] {
    return numbered(rng() % 2 == 0 ? "k" : "a-key-whose-head-ties-with-others:", rng() % 60000);
  };
  for (int i = 0; i < 200000; ++i) {
    const std::string key = random_key();
    const auto it = model.find(key);
    if (rng() % 5 != 0) {
      const ItemRef ref = ref_for(key);
      const UpsertResult r = engine_->upsert(key, ref);
      ASSERT_EQ(r.status, it == model.end() ? UpsertStatus::kInserted : UpsertStatus::kReplaced);
      ASSERT_EQ(r.previous, it == model.end() ? kNoItem : it->second);
      model[key] = ref;
    } else {
      ASSERT_EQ(engine_->erase(key), it == model.end() ? kNoItem : it->second);
      if (it != model.end()) model.erase(it);
    }
  }
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(engine_->lookup(numbered("absent", static_cast<unsigned long>(i))), kNoItem);
  }
  expect_matches(model);
}

INSTANTIATE_TEST_SUITE_P(dram, DramEngineTest, ::testing::Values(std::string("dram")));

TEST(EngineRegistry, FindsDramAndListsNames) {
  ASSERT_NE(find_engine("dram"), nullptr);
  EXPECT_FALSE(find_engine("dram")->persistent);
  EXPECT_FALSE(find_engine("dram")->description.empty());
  EXPECT_EQ(find_engine("no-such-engine"), nullptr);
  EXPECT_NE(engine_names().find("dram"), std::string::npos);
  EXPECT_NE(find_engine(kDefaultEngine), nullptr);
}

// What `pmcached --list-engines` prints: a line per engine, in registry order.
TEST(EngineRegistry, ListHasALinePerEngine) {
  std::string expected;
  for (const EngineInfo& info : registered_engines()) {
    expected += info.name + (info.persistent ? " persistent " : " volatile ") + info.description;
    expected += '\n';
  }
  EXPECT_EQ(engine_list(), expected);
  EXPECT_EQ(engine_list().rfind("dram volatile ", 0), 0u);
  EXPECT_NE(engine_list().find("\nwort persistent "), std::string::npos);
}

TEST(EngineRegistry, DramIsAVolatileOrderedConcurrentBaseline) {
  const auto engine = find_engine("dram")->create(EngineContext{});
  const EngineCapabilities caps = engine->capabilities();
  EXPECT_TRUE(caps.ordered);
  EXPECT_TRUE(caps.concurrent);
  EXPECT_FALSE(caps.persistent);
  bool says_volatile = false;
  std::string hash_index;
  for (const EngineStat& s : engine->stats()) {
    if (s.name == "persistent") says_volatile = s.value.find("no") == 0;
    if (s.name == "hash_index") hash_index = s.value;
  }
  EXPECT_EQ(hash_index, "yes");  // the default
  EngineContext tree_only;
  tree_only.hash_index = false;
  for (const EngineStat& s : find_engine("dram")->create(tree_only)->stats()) {
    if (s.name == "hash_index") hash_index = s.value;
  }
  EXPECT_EQ(hash_index, "no");
  EXPECT_TRUE(says_volatile);
}

}  // namespace
}  // namespace pmcached::engine

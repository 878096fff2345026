// The `persistent` engine suite (tests/engine/engine_suites.h: every engine registered persistent):
// functional tests on a pool against a std::map model, with the engine's invariants checker
// (Harness::check, index_harness.h) run after each scenario, and a reopen of the pool.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine/engine_registry.h"
#include "engine/pm/crash_simulator.h"
#include "tests/engine/engine_suites.h"
#include "tests/index/index_harness.h"

namespace pmcached::engine::testing {
namespace {

constexpr std::size_t kPoolBytes = 64u << 20;

class IndexTest : public ::testing::TestWithParam<std::string> {
 protected:
  IndexTest() : h_(GetParam(), kPoolBytes) {}

  void expect_matches_model() {
    ASSERT_EQ(h_.engine().size(), model_.size());
    for (const auto& [key, ref] : model_) ASSERT_EQ(h_.engine().lookup(key), ref) << key;
    EXPECT_EQ(h_.contents(), model_);
    EXPECT_EQ(h_.check(), "");
  }
  // Keys >= from, at most `limit`, from the engine and from the model.
  std::vector<std::string> scan_engine(const std::string& from, std::size_t limit) {
    std::vector<std::string> out;
    h_.engine().scan(from, [&](std::string_view key, ItemRef) {
      out.emplace_back(key);
      return out.size() < limit;
    });
    return out;
  }
  std::vector<std::string> scan_model(const std::string& from, std::size_t limit) {
    std::vector<std::string> out;
    for (auto it = model_.lower_bound(from); it != model_.end() && out.size() < limit; ++it) {
      out.push_back(it->first);
    }
    return out;
  }

  Harness h_;
  Model model_;
};

TEST_P(IndexTest, RegisteredAsPersistentWithStats) {
  const EngineInfo* info = find_engine(GetParam());
  ASSERT_NE(info, nullptr);
  EXPECT_TRUE(info->persistent);
  EXPECT_TRUE(h_.engine().capabilities().persistent);
  EXPECT_TRUE(h_.engine().capabilities().ordered);
  // Enough keys that every engine's tree has more than one level.
  for (std::uint64_t i = 1; i <= 1000; ++i)
    ASSERT_EQ(h_.put(be64(i), model_), UpsertStatus::kInserted);
  std::map<std::string, std::string> stats;
  for (const EngineStat& s : h_.engine().stats()) stats[s.name] = s.value;
  EXPECT_EQ(stats["engine"], GetParam());
  EXPECT_EQ(stats["persistent"], "yes");
  EXPECT_EQ(stats["keys"], "1000");
  EXPECT_GT(std::stod(stats["leaf_depth_avg"]), 1.0);
  for (const char* name : {"flushes_per_insert", "fences_per_insert", "flushes_per_update",
                           "fences_per_update", "flushes_per_delete", "fences_per_delete"}) {
    EXPECT_TRUE(stats.count(name)) << name;
  }
  EXPECT_GE(std::stod(stats["flushes_per_insert"]), 1.0);
}

TEST_P(IndexTest, RandomOperationsMatchAStdMapModel) {
  std::mt19937_64 rng(11);
  const std::vector<std::string> stems = {"", "user:", "user:1", "session:abcdefghijklmnop:", "x"};
  for (int i = 0; i < 20000; ++i) {
    std::string key;
    if (rng() % 2 == 0) {
      key = numbered(stems[rng() % stems.size()], rng() % 2000);
    } else {
      key = be64(rng() % 4 == 0 ? rng() : rng() % 3000);
    }
    const bool existed = model_.count(key) != 0;
    if (rng() % 3 != 0) {
      ASSERT_EQ(h_.put(key, model_), existed ? UpsertStatus::kReplaced : UpsertStatus::kInserted);
    } else {
      ASSERT_EQ(h_.del(key, model_), existed) << i;
    }
    if (i % 5000 == 4999) {
      ASSERT_EQ(h_.check(), "") << "after op " << i;
    }
  }
  expect_matches_model();
}

// 8-byte big-endian integer keys in the three distributions of seed 002 §4.
TEST_P(IndexTest, IntegerDistributionsDenseSparseClustered) {
  std::mt19937_64 rng(5);
  std::vector<std::uint64_t> dense(20000), sparse(20000), clustered;
  for (std::size_t i = 0; i < dense.size(); ++i) dense[i] = i + 1;
  for (std::uint64_t& v : sparse) v = rng();
  for (int c = 0; c < 300; ++c) {
    const std::uint64_t base = rng() & ~63ull;
    for (std::uint64_t j = 0; j < 64; ++j) clustered.push_back(base + j);
  }
  for (std::vector<std::uint64_t>* keys : {&dense, &sparse, &clustered}) {
    std::shuffle(keys->begin(), keys->end(), rng);
    for (std::uint64_t v : *keys) h_.put(be64(v), model_);
  }
  expect_matches_model();
  // Delete half of each distribution, check, then put them back.
  for (std::vector<std::uint64_t>* keys : {&dense, &sparse, &clustered}) {
    for (std::size_t i = 0; i < keys->size(); i += 2) {
      ASSERT_TRUE(h_.del(be64((*keys)[i]), model_));
    }
  }
  expect_matches_model();
  for (std::vector<std::uint64_t>* keys : {&dense, &sparse, &clustered}) {
    for (std::size_t i = 0; i < keys->size(); i += 2) {
      ASSERT_EQ(h_.put(be64((*keys)[i]), model_), UpsertStatus::kInserted);
    }
  }
  expect_matches_model();
}

TEST_P(IndexTest, KeysThatArePrefixesOfOtherKeys) {
  const std::vector<std::string> keys = {"abc", "a", "ab", "abcd", "abd", "b", "abcde", "ac"};
  for (const std::string& k : keys) ASSERT_EQ(h_.put(k, model_), UpsertStatus::kInserted) << k;
  expect_matches_model();
  EXPECT_EQ(h_.engine().lookup("abcdef"), kNoItem);
  EXPECT_EQ(h_.engine().lookup("aa"), kNoItem);
  EXPECT_EQ(h_.engine().lookup(std::string("a\0", 2)), kNoItem);
  EXPECT_EQ(scan_engine("", 100),
            (std::vector<std::string>{"a", "ab", "abc", "abcd", "abcde", "abd", "ac", "b"}));
  for (const char* k : {"ab", "abcd", "a"}) {
    ASSERT_TRUE(h_.del(k, model_));
    expect_matches_model();
  }
  ASSERT_EQ(h_.put("ab", model_), UpsertStatus::kInserted);
  ASSERT_EQ(h_.put("abc", model_), UpsertStatus::kReplaced);
  expect_matches_model();
}

// 250-byte keys sharing long prefixes (in a radix tree: prefixes far beyond the stored chunks, so
// splits happen in the optimistic part and lookups rely on the leaf comparison).
TEST_P(IndexTest, LongKeysSplitInTheOptimisticPrefix) {
  const std::string base(250, 'k');
  std::vector<std::string> keys;
  for (std::size_t pos : {249u, 200u, 100u, 20u, 5u, 4u}) {
    for (char c : {'a', 'z'}) {
      std::string k = base;
      k[pos] = c;
      keys.push_back(k);
    }
  }
  keys.push_back(base);
  keys.push_back(base.substr(0, 120));  // a prefix of all the others
  keys.push_back(std::string(250, '\xff'));
  keys.push_back(std::string(1, '\0'));
  for (const std::string& k : keys) ASSERT_EQ(h_.put(k, model_), UpsertStatus::kInserted);
  expect_matches_model();
  // Absent keys that match every stored chunk but differ in the optimistic part.
  std::string absent = base;
  absent[150] = 'q';
  EXPECT_EQ(h_.engine().lookup(absent), kNoItem);
  EXPECT_EQ(h_.engine().erase(absent), kNoItem);
  EXPECT_EQ(scan_engine(absent, 3), scan_model(absent, 3));
  ASSERT_EQ(h_.put(absent, model_), UpsertStatus::kInserted);
  expect_matches_model();
  for (const std::string& k : keys) ASSERT_TRUE(h_.del(k, model_));
  expect_matches_model();
}

TEST_P(IndexTest, OrderedScanFromArbitraryPoints) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 3000; ++i) {
    std::string k = (i % 3 == 0) ? be64(rng() % 100000) : numbered("key", rng() % 5000);
    h_.put(k, model_);
  }
  h_.put("k", model_);
  h_.put("key", model_);
  for (int i = 0; i < 400; ++i) {
    std::string from;
    switch (i % 4) {
      case 0: from = be64(rng() % 110000); break;
      case 1: from = numbered("key", rng() % 6000); break;
      case 2:
        from = std::next(model_.begin(), static_cast<long>(rng() % model_.size()))->first;
        break;
      default: from = std::string(1 + rng() % 4, static_cast<char>(rng()));
    }
    const std::size_t limit = 1 + rng() % 40;
    ASSERT_EQ(scan_engine(from, limit), scan_model(from, limit)) << "from #" << i;
  }
  EXPECT_EQ(scan_engine("", SIZE_MAX), scan_model("", SIZE_MAX));
  EXPECT_TRUE(scan_engine(std::string(3, '\xff'), 10).empty());
}

TEST_P(IndexTest, DeleteDownToEmptyAndReinsert) {
  std::vector<std::string> keys;
  for (int i = 0; i < 2000; ++i)
    keys.push_back(numbered("item-", static_cast<std::uint64_t>(i * 7919 % 2000)));
  for (int round = 0; round < 2; ++round) {
    for (const std::string& k : keys) ASSERT_EQ(h_.put(k, model_), UpsertStatus::kInserted);
    expect_matches_model();
    std::mt19937 rng(static_cast<unsigned>(round));
    std::shuffle(keys.begin(), keys.end(), rng);
    for (const std::string& k : keys) ASSERT_TRUE(h_.del(k, model_));
    EXPECT_EQ(h_.engine().size(), 0u);
    EXPECT_TRUE(h_.contents().empty());
    // At most two node blocks are left (a radix tree: an empty root node; a B-tree: its meta
    // block and one empty root leaf); every other node and every item was freed.
    EXPECT_LE(h_.inspect().nodes.size(), 2u);
    EXPECT_EQ(h_.check(), "");
  }
}

// With the heap exhausted, an insert that needs a node fails with nothing changed, and works
// once memory is back. Which insert needs a node depends on the engine (a radix tree: the first
// one, 0x0001 collides with the leaf 0x0000; a B-tree: the first into a full leaf), so new keys
// interleaved with the existing ones are inserted one by one until one fails.
TEST_P(IndexTest, OutOfMemoryChangesNothing) {
  Harness small(GetParam(), pm::kMinPoolSize);
  Model model;
  constexpr std::uint64_t kExisting = 40;
  for (std::uint64_t i = 0; i < kExisting; ++i) {
    ASSERT_EQ(small.put(be64(i << 8), model), UpsertStatus::kInserted);
  }
  // Items for 600 new keys, made before the heap is exhausted: key j sits after the existing
  // key j % 40 (the first ones: 0x0001, 0x0101, ...).
  std::vector<std::pair<std::string, ItemRef>> pending;
  for (std::uint64_t j = 0; j < 15 * kExisting; ++j) {
    const std::string key = be64(((j % kExisting) << 8) | (1 + j / kExisting));
    pending.emplace_back(key, small.make_item(key));
    ASSERT_NE(pending.back().second, kNoItem);
  }
  // Every chunk taken, then every partly used chunk of every size class, for nodes and items.
  std::vector<std::uint64_t> filler;
  for (pm::BlockUse use : {pm::BlockUse::kIndex, pm::BlockUse::kItem}) {
    // Item classes are memcached's (multiples of 8 up to 512 KiB, then whole pages).
    const std::size_t largest =
        use == pm::BlockUse::kItem ? std::size_t{1} << 20 : pm::kMaxSmallBlock;
    for (std::size_t size = largest; size >= 64; size -= 8) {
      if (small.allocator().rounded_size(size, use) != size) continue;  // not a size class
      for (std::uint64_t b; (b = small.allocator().allocate(size, use)) != 0;) filler.push_back(b);
    }
  }
  ASSERT_FALSE(filler.empty());
  std::size_t failed = pending.size();
  for (std::size_t j = 0; j < pending.size(); ++j) {
    const Model before = small.contents();
    const auto& [key, ref] = pending[j];
    const UpsertResult r = small.engine().upsert(key, ref);
    if (r.status == UpsertStatus::kInserted) {
      model[key] = ref;
      continue;
    }
    EXPECT_EQ(r.status, UpsertStatus::kOutOfMemory) << "insert " << j;
    EXPECT_EQ(small.contents(), before);
    EXPECT_EQ(small.engine().size(), before.size());
    EXPECT_EQ(small.engine().lookup(key), kNoItem);
    EXPECT_EQ(small.check(/*accounting=*/false), "");
    failed = j;
    break;
  }
  ASSERT_LT(failed, pending.size()) << "no insert needed a node within " << pending.size();
  for (std::uint64_t b : filler) small.allocator().free(b);
  const auto& [key, ref] = pending[failed];
  EXPECT_EQ(small.engine().upsert(key, ref).status, UpsertStatus::kInserted);
  EXPECT_EQ(small.engine().lookup(key), ref);
  model[key] = ref;
  for (std::size_t j = failed + 1; j < pending.size(); ++j) small.free_item(pending[j].second);
  EXPECT_EQ(small.contents(), model);
  EXPECT_EQ(small.check(), "");
}

// Readers and writers at the same time (also run under ThreadSanitizer).
TEST_P(IndexTest, ConcurrentReadersAndWriters) {
  std::vector<std::vector<std::pair<std::string, ItemRef>>> work(2);
  for (int t = 0; t < 2; ++t) {
    for (int i = 0; i < 3000; ++i) {
      const std::string key = numbered(t == 0 ? "t0-" : "t1-", static_cast<std::uint64_t>(i));
      work[static_cast<std::size_t>(t)].emplace_back(key, h_.make_item(key));
    }
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (const auto& [key, ref] : work[static_cast<std::size_t>(t)]) {
        EXPECT_EQ(h_.engine().upsert(key, ref).status, UpsertStatus::kInserted);
        EXPECT_EQ(h_.engine().lookup(key), ref);
      }
      for (std::size_t i = 0; i < work[static_cast<std::size_t>(t)].size(); i += 2) {
        EXPECT_NE(h_.engine().erase(work[static_cast<std::size_t>(t)][i].first), kNoItem);
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < 50; ++i) {
      std::string previous;
      h_.engine().scan("t", [&](std::string_view key, ItemRef) {
        EXPECT_LT(previous, key);
        previous = key;
        return true;
      });
    }
  });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(h_.engine().size(), 3000u);
  for (const auto& list : work) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (i % 2 == 0) {
        h_.free_item(list[i].second);
      } else {
        model_[list[i].first] = list[i].second;
      }
    }
  }
  expect_matches_model();
}

// Reopening the pool as a restart does (recover, then the allocator rebuilt from what the engine
// reaches) finds every key with its item, and the tree and the accounting intact.
TEST_P(IndexTest, ReopenKeepsEveryKey) {
  pm::CrashSimulator sim(pm::kMinPoolSize);
  Model model;
  {
    Harness first(GetParam(), pm::kMinPoolSize, &sim);
    std::mt19937_64 rng(17);
    for (int i = 0; i < 2000; ++i) {
      const std::string key = (i % 2 == 0) ? numbered("user:", rng() % 1500) : be64(rng() % 1500);
      if (rng() % 4 != 0) {
        ASSERT_NE(first.put(key, model), UpsertStatus::kOutOfMemory) << i;
      } else {
        first.del(key, model);
      }
    }
    ASSERT_EQ(first.contents(), model);
  }
  Harness reopened(GetParam(), sim.image());
  EXPECT_EQ(reopened.restart_problems(), "");
  EXPECT_EQ(reopened.engine().size(), model.size());
  for (const auto& [key, ref] : model) ASSERT_EQ(reopened.engine().lookup(key), ref) << key;
  EXPECT_EQ(reopened.contents(), model);
  EXPECT_EQ(reopened.check(), "");
}

INSTANTIATE_ENGINE_SUITE(persistent, IndexTest);
ENGINE_SUITES_CHECK(IndexTest)

}  // namespace
}  // namespace pmcached::engine::testing

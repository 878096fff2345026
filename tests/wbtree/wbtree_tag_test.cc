// wbtree key tags (engine/wbtree/wbtree_node.h; tagged since layout version 2, docs/LAYOUTS.md):
// an exact-match search reads a key only where an entry's tag matches — about one key per hit,
// almost none per miss, also for replace and erase; keys whose tags collide are still told apart
// by their keys; the inspector flags a leaf entry with a wrong tag; recovery refuses a pool whose
// leaf entry has bits past the tag or a reference outside the heap, or whose meta block is of an
// older layout version (1 to 3).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "engine/btree/btree_engine.h"
#include "engine/btree/key_tag.h"
#include "engine/engine_registry.h"
#include "engine/pm/crash_simulator.h"
#include "engine/wbtree/wbtree_node.h"
#include "tests/index/index_crash.h"
#include "tests/index/recovery_crash.h"
#include "tests/wbtree/wbtree_inspect.h"
#include "tests/wbtree/wbtree_shape.h"

namespace pmcached::engine::wbtree::testing {
namespace {

using ::pmcached::engine::testing::be64;
using ::pmcached::engine::testing::CountingEngine;
using ::pmcached::engine::testing::kCrashRegionBytes;
using ::pmcached::engine::testing::Model;
using ::pmcached::engine::testing::shuffled_keys;
using ::pmcached::engine::testing::stat_number;

// 5000 keys (leaves of 26..52 entries under inner nodes): a binary search would read ~5-6 keys
// per lookup; with tags a hit reads its own key plus a false match with probability < 52/2^15.
TEST(WbTreeTags, ExactMatchReadsAboutOneKeyPerHitAndAlmostNonePerMiss) {
  constexpr std::size_t kKeys = 5000;
  std::vector<std::string> keys = shuffled_keys(kKeys, 21);
  for (std::uint64_t i = 0; i < 2000; ++i) keys.push_back(be64(i * 0x9E3779B9ull + 1));  // misses
  CountingEngine c(kEngine, keys);
  for (std::size_t i = 0; i < kKeys; ++i) {
    ASSERT_EQ(c.engine().upsert(keys[i], CountingEngine::ref(i)).status, UpsertStatus::kInserted);
  }
  ASSERT_GE(stat_number(c.engine(), "nodes_inner"), 1u);

  c.reset();
  for (std::size_t i = 0; i < kKeys; ++i)
    ASSERT_EQ(c.engine().lookup(keys[i]), CountingEngine::ref(i));
  EXPECT_GE(c.reads(), kKeys);
  EXPECT_LE(c.reads(), kKeys + kKeys / 100);
  c.reset();
  for (std::size_t i = kKeys; i < keys.size(); ++i) ASSERT_EQ(c.engine().lookup(keys[i]), kNoItem);
  EXPECT_LE(c.reads(), 20u);  // 2000 misses, each < 52/2^15 false matches expected

  // A replace finds the key by its tag too (then writes the entry: no further key read).
  c.reset();
  for (std::size_t i = 0; i < 1000; ++i) {
    const UpsertResult r = c.engine().upsert(keys[i], CountingEngine::ref(i));
    ASSERT_EQ(r.status, UpsertStatus::kReplaced);
    ASSERT_EQ(r.previous, CountingEngine::ref(i));
  }
  EXPECT_LE(c.reads(), 1000u + 10u);
  // So does an erase (a miss included).
  c.reset();
  for (std::size_t i = 0; i < 1000; ++i)
    ASSERT_EQ(c.engine().erase(keys[i]), CountingEngine::ref(i));
  for (std::size_t i = kKeys; i < kKeys + 1000; ++i) ASSERT_EQ(c.engine().erase(keys[i]), kNoItem);
  EXPECT_LE(c.reads(), 1000u + 10u);
  EXPECT_EQ(c.engine().size(), kKeys - 1000);
}

// Keys with equal tags in one leaf: each is found, replaced and erased by its own key.
TEST(WbTreeTags, KeysWithEqualTagsAreToldApartByTheirKeys) {
  std::unordered_map<std::uint64_t, std::string> by_tag;
  std::vector<std::string> keys;
  for (std::uint64_t i = 0; keys.size() < 6; ++i) {
    ASSERT_LT(i, 1000000u);
    std::string k = be64(i);
    const auto [it, fresh] = by_tag.emplace(btree::key_tag(k), k);
    if (!fresh && std::find(keys.begin(), keys.end(), it->second) == keys.end()) {
      keys.push_back(it->second);
      keys.push_back(std::move(k));
    }
  }
  for (std::size_t i = 0; i < keys.size(); i += 2) {
    ASSERT_EQ(btree::key_tag(keys[i]), btree::key_tag(keys[i + 1]));
  }
  CountingEngine c(kEngine, keys);
  IndexEngine& e = c.engine();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(e.upsert(keys[i], CountingEngine::ref(i)).status, UpsertStatus::kInserted);
  }
  for (std::size_t i = 0; i < keys.size(); ++i)
    EXPECT_EQ(e.lookup(keys[i]), CountingEngine::ref(i));
  // Replace the second of each pair (with its other item), then erase the first.
  const std::size_t n = keys.size();
  for (std::size_t i = 0; i < n; i += 2) {
    const UpsertResult r = e.upsert(keys[i + 1], CountingEngine::ref(i + 1 + n));
    EXPECT_EQ(r.status, UpsertStatus::kReplaced);
    EXPECT_EQ(r.previous, CountingEngine::ref(i + 1));
    EXPECT_EQ(e.lookup(keys[i]), CountingEngine::ref(i));
    EXPECT_EQ(e.erase(keys[i]), CountingEngine::ref(i));
    EXPECT_EQ(e.lookup(keys[i]), kNoItem);
    EXPECT_EQ(e.lookup(keys[i + 1]), CountingEngine::ref(i + 1 + n));
  }
  EXPECT_EQ(e.size(), keys.size() / 2);
}

// A persisted tree of two levels; tests corrupt one word of its image and restart from it.
class WbTreeTagCorruption : public ::testing::Test {
 protected:
  WbTreeTagCorruption() : sim_(kCrashRegionBytes) {
    Harness h(kEngine, kCrashRegionBytes, &sim_);
    Model model;
    for (std::uint64_t i = 0; i < 200; ++i) (void)h.put(be64(i * 7), model);
    EXPECT_EQ(h.check(), "");
    meta_ = meta_of(h.region());
    const std::vector<std::uint64_t> leaves = children_of(h.region(), tree_root(h.region()));
    EXPECT_GE(leaves.size(), 2u);
    const std::uint64_t leaf = leaves.back();
    entry_ = leaf + offsetof(Leaf, entries) + 8 * h.region().at<NodeHeader>(leaf)->order[0];
  }
  [[nodiscard]] std::uint64_t word(const std::vector<char>& image, std::uint64_t offset) const {
    std::uint64_t w;
    std::memcpy(&w, image.data() + offset, sizeof w);
    return w;
  }
  [[nodiscard]] std::vector<char> with(std::uint64_t offset, std::uint64_t w) const {
    std::vector<char> image = sim_.image();
    std::memcpy(image.data() + offset, &w, sizeof w);
    return image;
  }
  // The message of the error a restart from `image` throws ("" if none).
  [[nodiscard]] static std::string restart_error(const std::vector<char>& image) {
    try {
      Harness restarted(kEngine, image);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  }
  [[nodiscard]] std::uint64_t entry_word() const { return word(sim_.image(), entry_); }

  pm::CrashSimulator sim_;
  std::uint64_t meta_ = 0;
  std::uint64_t entry_ = 0;  // the pool offset of one in-use leaf entry
};

TEST_F(WbTreeTagCorruption, TheUncorruptedImageRestarts) {
  EXPECT_EQ(restart_error(sim_.image()), "");
  ASSERT_NE(btree::tag_of(entry_word()), 0u) << "pick another key: this one's tag is zero";
}

// Recovery does not read keys, so a wrong tag does not refuse the pool (a tag that does not
// match its key is also what a torn item looks like, which the store drops by its checksum); the
// inspector finds it, and the key is then invisible to an exact-match lookup.
TEST_F(WbTreeTagCorruption, AWrongTagIsFlaggedByTheInspector) {
  const std::vector<char> image = with(entry_, entry_word() ^ (std::uint64_t{1} << 50));
  const auto region = pm::PmRegion::from_image(image);
  const auto report = inspect_wbtree(*region, meta_, KeyHeads::kSkip);  // a raw image
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_NE(report.problems[0].find("key tag does not match its key"), std::string::npos)
      << report.problems[0];
  EXPECT_EQ(restart_error(image), "");
  Harness restarted(kEngine, image);
  EXPECT_NE(restarted.check().find("key tag does not match its key"), std::string::npos);
}

TEST_F(WbTreeTagCorruption, ABitPastTheTagIsRefused) {
  const std::string error = restart_error(with(entry_, entry_word() | (std::uint64_t{1} << 63)));
  EXPECT_NE(error.find("bits past its tag"), std::string::npos) << error;
}

TEST_F(WbTreeTagCorruption, AReferenceOutsideTheHeapIsRefused) {
  const std::uint64_t outside = btree::tagged(kCrashRegionBytes + 64, btree::tag_of(entry_word()));
  const std::string error = restart_error(with(entry_, outside));
  EXPECT_NE(error.find("refers outside the heap"), std::string::npos) << error;
}

// Layout version 1 had bare references; version 2 cleared bit 0 for every insert, so its
// binaries trust bit 0 where version 3 may leave a slot array that needs re-sorting; version 3's
// inner nodes have no room for the key heads of version 4.
TEST_F(WbTreeTagCorruption, PoolsOfLayoutVersions1To3AreRefused) {
  for (const char* magic : {"WBTREE01", "WBTREE02", "WBTREE03"}) {
    std::uint64_t old = 0;
    std::memcpy(&old, magic, 8);
    ASSERT_NE(old, kMetaMagic);
    const std::string error = restart_error(with(meta_ + offsetof(btree::Meta, magic), old));
    EXPECT_NE(error.find("pool is corrupt: the wbtree meta block"), std::string::npos)
        << magic << ": " << error;
  }
}

}  // namespace
}  // namespace pmcached::engine::wbtree::testing

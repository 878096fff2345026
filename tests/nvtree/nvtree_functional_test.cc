// NV-Tree functional tests (engine/nvtree): operations as appended entries and counted flushes,
// split vs compaction of a full leaf, unlink of emptied leaves, the full inner rebuild on a PLN
// overflow, every key found after many splits in any order, the start-up rebuild, and an erase
// that finds its leaf full and the heap exhausted, and the key tags (a search reads about one key
// per hit; a tag that does not match its key is reported by the inspector). The layout is read
// directly (nvtree_leaf.h); Harness::check() runs the inspector (nvtree_inspect.h) and the
// allocator accounting.
#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/btree/btree_engine.h"
#include "engine/btree/key_tag.h"
#include "engine/nvtree/inner_array.h"
#include "engine/nvtree/nvtree_leaf.h"
#include "engine/pm/persistence.h"
#include "tests/index/index_harness.h"
#include "tests/index/recovery_crash.h"

namespace pmcached::engine::nvtree {
namespace {

using engine::testing::be64;
using engine::testing::Harness;
using engine::testing::Model;
using engine::testing::stat_number;

constexpr std::size_t kPoolBytes = 64u << 20;

class NvTreeTest : public ::testing::Test {
 protected:
  NvTreeTest() : h_("nvtree", kPoolBytes) {}

  const btree::Meta& meta() { return *h_.region().at<btree::Meta>(h_.pool().root()); }
  const Leaf& leaf(std::uint64_t offset) { return *h_.region().at<Leaf>(offset); }
  std::vector<std::uint64_t> chain() {
    std::vector<std::uint64_t> out;
    for (std::uint64_t l = meta().root; l != 0; l = leaf(l).next) out.push_back(l);
    return out;
  }
  std::uint64_t stat(const std::string& name) { return stat_number(h_.engine(), name); }
  void put_all(const std::vector<std::uint64_t>& values) {
    for (std::uint64_t v : values) ASSERT_NE(h_.put(be64(v), model_), UpsertStatus::kOutOfMemory);
  }
  void expect_model() {
    ASSERT_EQ(h_.engine().size(), model_.size());
    for (const auto& [key, ref] : model_) ASSERT_EQ(h_.engine().lookup(key), ref);
    EXPECT_EQ(h_.contents(), model_);
    EXPECT_EQ(h_.check(), "");
  }

  Harness h_;
  Model model_;
};

std::vector<std::uint64_t> range(std::uint64_t first, std::uint64_t count) {
  std::vector<std::uint64_t> v;
  for (std::uint64_t i = 0; i < count; ++i) v.push_back(first + i);
  return v;
}

TEST_F(NvTreeTest, InsertReplaceAndDeleteAreAppendedEntriesWithTwoFlushes) {
  const auto flushed = [](pm::OpKind kind) {
    return pm::totals().by_kind[static_cast<std::size_t>(kind)];
  };
  put_all({1, 2});
  const std::uint64_t l = meta().root;
  ASSERT_EQ(chain().size(), 1u);
  EXPECT_EQ(leaf(l).count, 2u);
  EXPECT_EQ(btree::ref_of(leaf(l).entries[0]), model_[be64(1)]);
  EXPECT_EQ(btree::ref_of(leaf(l).entries[1]), model_[be64(2)]);

  pm::reset_counters();
  put_all({3});  // an insert: the entry's line, then the counter's line
  EXPECT_EQ(flushed(pm::OpKind::kInsert).lines_flushed, 2u);
  EXPECT_EQ(flushed(pm::OpKind::kInsert).fences, 2u);
  put_all({1});  // a replace: new entry + negative entry (one or two lines), then the counter
  EXPECT_EQ(flushed(pm::OpKind::kUpdate).operations, 1u);
  EXPECT_GE(flushed(pm::OpKind::kUpdate).lines_flushed, 2u);
  EXPECT_LE(flushed(pm::OpKind::kUpdate).lines_flushed, 3u);
  EXPECT_EQ(flushed(pm::OpKind::kUpdate).fences, 2u);
  ASSERT_TRUE(h_.del(be64(2), model_));  // a delete: one negative entry, then the counter
  EXPECT_EQ(flushed(pm::OpKind::kDelete).lines_flushed, 2u);
  EXPECT_EQ(flushed(pm::OpKind::kDelete).fences, 2u);

  ASSERT_EQ(leaf(l).count, 6u);
  EXPECT_EQ(btree::ref_of(leaf(l).entries[3]), model_[be64(1)]);
  EXPECT_EQ(leaf(l).entries[4], negative(0));
  EXPECT_EQ(leaf(l).entries[5], negative(1));
  EXPECT_EQ(live_count(leaf(l)), 2u);
  EXPECT_EQ(h_.engine().lookup(be64(2)), kNoItem);
  expect_model();
  EXPECT_EQ(stat("flushes_per_insert"), 2u);
}

TEST_F(NvTreeTest, AFullLeafSplitsIntoTwoSortedHalves) {
  std::vector<std::uint64_t> values = range(100, kLeafEntries);
  std::shuffle(values.begin(), values.end(), std::mt19937_64(5));
  put_all(values);
  ASSERT_EQ(chain().size(), 1u);
  EXPECT_EQ(leaf(chain()[0]).count, kLeafEntries);
  put_all({99});  // the 59th key: the leaf is full
  EXPECT_EQ(stat("leaf_splits"), 1u);
  EXPECT_EQ(stat("leaf_compactions"), 0u);
  const std::vector<std::uint64_t> leaves = chain();
  ASSERT_EQ(leaves.size(), 2u);
  // Halves of 29 sorted entries; the new key then appended to the left one.
  EXPECT_EQ(leaf(leaves[0]).count, kHalfLeaf + 1);
  EXPECT_EQ(leaf(leaves[1]).count, kHalfLeaf);
  for (unsigned i = 0; i < kHalfLeaf; ++i) {
    EXPECT_EQ(btree::ref_of(leaf(leaves[0]).entries[i]), model_[be64(100 + i)]);
    EXPECT_EQ(btree::ref_of(leaf(leaves[1]).entries[i]), model_[be64(100 + kHalfLeaf + i)]);
  }
  EXPECT_EQ(btree::ref_of(leaf(leaves[0]).entries[kHalfLeaf]), model_[be64(99)]);
  EXPECT_EQ(stat("nodes_leaf"), 2u);
  expect_model();
}

TEST_F(NvTreeTest, AFullLeafOfFewLiveEntriesIsCompactedIntoOne) {
  put_all(range(1, 20));
  for (int round = 0; round < 19; ++round) put_all({static_cast<std::uint64_t>(1 + round)});
  const std::uint64_t old = chain()[0];
  ASSERT_EQ(leaf(old).count, kLeafEntries);  // 20 inserts + 19 replaces of 2 entries
  put_all({20});                             // one more replace: no room for two entries
  EXPECT_EQ(stat("leaf_compactions"), 1u);
  EXPECT_EQ(stat("leaf_splits"), 0u);
  ASSERT_EQ(chain().size(), 1u);
  EXPECT_NE(chain()[0], old);
  EXPECT_EQ(leaf(chain()[0]).count, 20u + 2u);  // the 20 live entries, then the replace
  expect_model();                               // the old leaf is freed (accounting)
}

TEST_F(NvTreeTest, ADeleteInAFullLeafRestructuresFirst) {
  put_all(range(1, kLeafEntries));
  ASSERT_TRUE(h_.del(be64(7), model_));
  EXPECT_EQ(stat("leaf_splits"), 1u);
  ASSERT_EQ(chain().size(), 2u);
  EXPECT_EQ(leaf(chain()[0]).count, kHalfLeaf + 1);  // 29 entries + the negative one
  EXPECT_EQ(leaf(chain()[0]).entries[kHalfLeaf], negative(6));
  expect_model();
}

TEST_F(NvTreeTest, EmptiedLeavesAreUnlinkedDownToTheMetaBlock) {
  put_all(range(1, 3 * kLeafEntries));
  const std::size_t leaves = chain().size();
  ASSERT_GE(leaves, 3u);
  // Empty the middle leaf: the chain skips it.
  const Leaf& middle = leaf(chain()[1]);
  std::vector<std::string> keys;
  for (std::uint64_t m = live_mask(middle); m != 0; m &= m - 1) {
    keys.emplace_back(
        engine::testing::item_key(h_.region(), btree::ref_of(middle.entries[__builtin_ctzll(m)])));
  }
  for (const std::string& k : keys) ASSERT_TRUE(h_.del(k, model_));
  EXPECT_EQ(chain().size(), leaves - 1);
  EXPECT_EQ(stat("nodes_leaf"), leaves - 1);
  expect_model();
  // Everything, first leaf first: meta.root moves along, then becomes 0.
  while (!model_.empty()) ASSERT_TRUE(h_.del(model_.begin()->first, model_));
  EXPECT_NE(h_.pool().root(), 0u);
  EXPECT_EQ(meta().root, 0u);
  EXPECT_EQ(stat("nodes_leaf"), 0u);
  expect_model();
  put_all({42});
  EXPECT_EQ(chain().size(), 1u);
  expect_model();
}

// Ascending inserts split the last leaf of the last PLN: the one PLN of the first leaf overflows
// at its kSlots + 1st leaf (one rebuild); the rebuild leaves that PLN with kPlnFill-ish leaves,
// so the next overflow comes kSlots - (its leaves) + 1 splits later.
TEST_F(NvTreeTest, APlnOverflowRebuildsTheWholeInnerArrayOnce) {
  std::uint64_t v = 1;
  const auto insert_until_leaves = [&](std::uint64_t leaves) {
    while (stat("nodes_leaf") < leaves) put_all({v++});
  };
  insert_until_leaves(InnerArray::kSlots);
  EXPECT_EQ(stat("inner_rebuilds"), 0u);
  insert_until_leaves(InnerArray::kSlots + 1);
  EXPECT_EQ(stat("inner_rebuilds"), 1u);
  EXPECT_EQ(stat("leaf_splits"), InnerArray::kSlots);
  // After the rebuild: m leaves in ceil(m / kPlnFill) PLNs, the last holding m / P.
  const std::uint64_t m = InnerArray::kSlots + 1;
  const std::uint64_t plns = (m + InnerArray::kPlnFill - 1) / InnerArray::kPlnFill;
  const std::uint64_t last = m / plns;
  insert_until_leaves(m + InnerArray::kSlots - last);
  EXPECT_EQ(stat("inner_rebuilds"), 1u);
  insert_until_leaves(m + InnerArray::kSlots - last + 1);
  EXPECT_EQ(stat("inner_rebuilds"), 2u);
  expect_model();
}

TEST_F(NvTreeTest, EveryKeyIsFoundAfterManySplitsInAnyOrder) {
  constexpr std::uint64_t kKeys = 6000;
  std::vector<std::uint64_t> ascending = range(1, kKeys);
  std::vector<std::uint64_t> descending(ascending.rbegin(), ascending.rend());
  std::vector<std::uint64_t> shuffled = ascending;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937_64(17));
  std::uint64_t tag = 0;
  for (const auto* order : {&ascending, &descending, &shuffled}) {
    ++tag;
    for (std::uint64_t v : *order)
      ASSERT_NE(h_.put(be64(tag << 32 | v), model_), UpsertStatus::kOutOfMemory);
    expect_model();
  }
  EXPECT_GT(stat("inner_rebuilds"), 0u);
  // Keys of every length up to 250 bytes between them, then half of everything deleted.
  std::mt19937_64 rng(3);
  for (int i = 0; i < 3000; ++i) {
    std::string key = be64(1 + rng() % 3) + std::string(rng() % 243, static_cast<char>(rng()));
    ASSERT_NE(h_.put(key, model_), UpsertStatus::kOutOfMemory);
  }
  expect_model();
  std::vector<std::string> keys;
  for (const auto& [key, ref] : model_) keys.push_back(key);
  std::shuffle(keys.begin(), keys.end(), rng);
  keys.resize(keys.size() / 2);
  for (const std::string& k : keys) ASSERT_TRUE(h_.del(k, model_));
  expect_model();
  EXPECT_GE(stat("leaf_depth_avg"), 3u);  // two inner levels and the leaf
}

TEST_F(NvTreeTest, StartUpRebuildsTheInnerArrayFromTheLeavesWithoutWriting) {
  std::vector<std::uint64_t> values = range(1, 5000);
  std::shuffle(values.begin(), values.end(), std::mt19937_64(8));
  put_all(values);
  for (std::uint64_t v = 1; v <= 5000; v += 3) ASSERT_TRUE(h_.del(be64(v), model_));
  const std::uint64_t leaves = stat("nodes_leaf");
  const std::vector<char> image(h_.region().base(), h_.region().base() + h_.region().size());
  pm::reset_counters();
  Harness restarted("nvtree", image);
  const pm::OpCounters recovery =
      pm::totals().by_kind[static_cast<std::size_t>(pm::OpKind::kRecovery)];
  EXPECT_EQ(recovery.lines_flushed, 0u);
  EXPECT_EQ(recovery.fences, 0u);
  EXPECT_EQ(restarted.restart_problems(), "");
  EXPECT_EQ(restarted.check(), "");
  EXPECT_EQ(restarted.contents(), model_);
  EXPECT_EQ(stat_number(restarted.engine(), "nodes_leaf"), leaves);
  EXPECT_EQ(stat_number(restarted.engine(), "keys"), model_.size());
  EXPECT_EQ(stat_number(restarted.engine(), "inner_rebuilds"), 0u);
  // Absent keys route somewhere and are not found; new keys go on working.
  for (std::uint64_t v = 1; v <= 5000; v += 3) EXPECT_EQ(restarted.engine().lookup(be64(v)), 0u);
  for (std::uint64_t v = 1; v <= 5000; v += 3)
    ASSERT_EQ(restarted.put(be64(v), model_), UpsertStatus::kInserted);
  EXPECT_EQ(restarted.contents(), model_);
  EXPECT_EQ(restarted.check(), "");
}

// Every positive entry carries its key's tag (engine/btree/key_tag.h): a lookup reads the key of
// an entry only where the tag matches, about one key per hit and almost none per miss.
TEST(NvTreeTagTest, ALookupReadsAKeyOnlyWhereTheTagMatches) {
  std::vector<std::string> keys;
  for (std::uint64_t i = 0; i < 50; ++i) keys.push_back(be64(i * 7919));  // one leaf
  engine::testing::CountingEngine c("nvtree", keys);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(c.engine().upsert(keys[i], c.ref(i)).status, UpsertStatus::kInserted);
  }
  c.reset();
  for (std::size_t i = 0; i < keys.size(); ++i) ASSERT_EQ(c.engine().lookup(keys[i]), c.ref(i));
  // 50 hits; another entry's 15-bit tag matches with probability 1/32768.
  EXPECT_LE(c.reads(), keys.size() + 2);
  c.reset();
  for (std::uint64_t i = 0; i < 500; ++i) {
    ASSERT_EQ(c.engine().lookup(be64(i * 7919 + 1)), kNoItem);
  }
  EXPECT_LE(c.reads(), 5u);  // 500 misses x 50 entries / 32768 expected: under one
}

// A tag that does not match its key is what an item damaged in its key bytes looks like: the
// inspector reports it, and the key is not found (the store's checksum pass drops such items).
TEST_F(NvTreeTest, AnEntryWhoseTagDoesNotMatchItsKeyIsReportedAndNotFound) {
  put_all(range(1, 10));
  ASSERT_EQ(h_.check(), "");
  Leaf& l = *h_.region().at<Leaf>(meta().root);
  ASSERT_EQ(btree::tag_of(l.entries[3]), btree::key_tag(be64(4)));
  l.entries[3] ^= btree::kTagMask & (btree::kTagMask >> 1);  // flip tag bits, keep the ref
  EXPECT_NE(h_.inspect().problems.size(), 0u);
  EXPECT_EQ(h_.engine().lookup(be64(4)), kNoItem);
  EXPECT_EQ(h_.engine().lookup(be64(5)), model_[be64(5)]);
}

// An erase never fails: with its leaf full and no block for the compaction, the entry is killed
// in place (a negative entry naming itself).
TEST(NvTreeOutOfMemoryTest, AnEraseInAFullLeafWithTheHeapFullKillsTheEntryInPlace) {
  Harness h("nvtree", pm::kMinPoolSize);
  Model model;
  for (std::uint64_t i = 1; i <= 30; ++i) ASSERT_EQ(h.put(be64(i), model), UpsertStatus::kInserted);
  for (std::uint64_t i = 1; i <= 14; ++i) ASSERT_EQ(h.put(be64(i), model), UpsertStatus::kReplaced);
  const std::uint64_t l = h.region().at<btree::Meta>(h.pool().root())->root;
  const Leaf& full = *h.region().at<Leaf>(l);
  ASSERT_EQ(full.count, kLeafEntries);
  std::vector<std::uint64_t> filler;
  for (std::size_t size = pm::kMaxSmallBlock; size >= 64; size -= 16) {
    if (h.allocator().rounded_size(size, pm::BlockUse::kIndex) != size) continue;
    for (std::uint64_t b; (b = h.allocator().allocate(size, pm::BlockUse::kIndex)) != 0;) {
      filler.push_back(b);
    }
  }
  const unsigned j = find_entry(full, be64(20), btree::key_tag(be64(20)), [&](ItemRef r) {
    return engine::testing::item_key(h.region(), r);
  });
  ASSERT_NE(j, kNotFound);
  ASSERT_TRUE(h.del(be64(20), model));
  EXPECT_EQ(full.count, kLeafEntries);
  EXPECT_EQ(full.entries[j], negative(j));
  EXPECT_EQ(h.engine().lookup(be64(20)), kNoItem);
  for (std::uint64_t b : filler) h.allocator().free(b);
  EXPECT_EQ(h.check(), "");
  EXPECT_EQ(h.contents(), model);
  // The leaf restructures normally once the heap has room again.
  ASSERT_EQ(h.put(be64(20), model), UpsertStatus::kInserted);
  EXPECT_EQ(h.check(), "");
  EXPECT_EQ(h.contents(), model);
}

}  // namespace
}  // namespace pmcached::engine::nvtree

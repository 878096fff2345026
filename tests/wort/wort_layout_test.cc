// Tests of the wort engine's layout-specific behaviour: its node size in `stats engine`, the
// write-optimal cost model of seed 002 §3.4, inserts into an empty slot that need no memory, and
// an empty tree that resets the root field. Shared behaviour is tested in tests/index.
#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/pm/persistence.h"
#include "engine/wort/wort_node.h"
#include "tests/index/index_harness.h"

namespace pmcached::engine::testing {
namespace {

constexpr std::size_t kPoolBytes = 64u << 20;

TEST(WortLayout, StatsCountNodesOf144Bytes) {
  Harness h("wort", kPoolBytes);
  Model model;
  for (std::uint64_t i = 1; i <= 100; ++i) {
    ASSERT_EQ(h.put(be64(i), model), UpsertStatus::kInserted);
  }
  std::map<std::string, std::string> stats;
  for (const EngineStat& s : h.engine().stats()) stats[s.name] = s.value;
  EXPECT_EQ(std::stoul(stats["nodes"]), h.inspect().nodes.size());
  EXPECT_EQ(std::stoul(stats["node_bytes"]), std::stoul(stats["nodes"]) * sizeof(wort::Node));
  EXPECT_EQ(h.check(), "");
}

// An insert into an empty slot needs no memory, so it works with the heap exhausted.
TEST(WortLayout, InsertIntoAnEmptySlotNeedsNoMemory) {
  Harness h("wort", pm::kMinPoolSize);
  Model model;
  for (std::uint64_t i = 0; i < 40; ++i) {
    ASSERT_EQ(h.put(be64(i << 8), model), UpsertStatus::kInserted);
  }
  // The root has no child for nibble 5: 0x5000.. fills an empty root slot.
  const ItemRef needs_node = h.make_item(be64(0x0001));  // collides with the leaf 0x0000
  const ItemRef empty_slot = h.make_item(be64(0x5ull << 60));
  ASSERT_NE(needs_node, kNoItem);
  ASSERT_NE(empty_slot, kNoItem);
  std::vector<std::uint64_t> filler;
  for (pm::BlockUse use : {pm::BlockUse::kIndex, pm::BlockUse::kItem}) {
    for (std::size_t size : {std::size_t{64} << 10, sizeof(wort::Node), std::size_t{64}}) {
      for (std::uint64_t b; (b = h.allocator().allocate(size, use)) != 0;) filler.push_back(b);
    }
  }
  ASSERT_EQ(h.engine().upsert(be64(0x0001), needs_node).status, UpsertStatus::kOutOfMemory);
  h.free_item(needs_node);
  EXPECT_EQ(h.engine().upsert(be64(0x5ull << 60), empty_slot).status, UpsertStatus::kInserted);
  for (std::uint64_t b : filler) h.allocator().free(b);
  model[be64(0x5ull << 60)] = empty_slot;
  EXPECT_EQ(h.contents(), model);
  EXPECT_EQ(h.check(), "");
}

TEST(WortLayout, AnEmptyTreeResetsTheRootField) {
  Harness h("wort", kPoolBytes);
  Model model;
  for (std::uint64_t i = 0; i < 500; ++i) {
    ASSERT_EQ(h.put(be64(i * 977), model), UpsertStatus::kInserted);
  }
  for (std::uint64_t i = 0; i < 500; ++i) ASSERT_TRUE(h.del(be64(i * 977), model));
  EXPECT_EQ(h.pool().root(), 0u);
  EXPECT_EQ(h.allocator().stats().bytes_in_use, 0u) << "every node and item was freed";
}

// The write-optimal cost model: an insert into an empty slot is one line and one fence; a
// replace is exactly one of each; a new node adds its three lines and one fence.
TEST(WortLayout, FlushesPerOperationFollowTheCostModel) {
  Harness h("wort", kPoolBytes);
  std::vector<std::uint64_t> dense(20000);
  for (std::size_t i = 0; i < dense.size(); ++i) dense[i] = i + 1;
  std::shuffle(dense.begin(), dense.end(), std::mt19937_64(1));
  std::vector<ItemRef> items;
  for (std::uint64_t v : dense) items.push_back(h.make_item(be64(v)));
  pm::reset_counters();
  for (std::size_t i = 0; i < dense.size(); ++i) {
    ASSERT_EQ(h.engine().upsert(be64(dense[i]), items[i]).status, UpsertStatus::kInserted);
  }
  for (std::size_t i = 0; i < 1000; ++i) {
    ASSERT_EQ(h.engine().upsert(be64(dense[i]), items[i]).status, UpsertStatus::kReplaced);
  }
  for (std::size_t i = 0; i < 1000; ++i) ASSERT_EQ(h.engine().erase(be64(dense[i])), items[i]);
  const pm::PersistTotals t = pm::totals();
  const auto& ins = t.by_kind[static_cast<std::size_t>(pm::OpKind::kInsert)];
  const auto& upd = t.by_kind[static_cast<std::size_t>(pm::OpKind::kUpdate)];
  const auto& del = t.by_kind[static_cast<std::size_t>(pm::OpKind::kDelete)];
  ASSERT_EQ(ins.operations, dense.size());
  ASSERT_EQ(upd.operations, 1000u);
  ASSERT_EQ(del.operations, 1000u);
  // Dense: about one new node (3 lines + 1 fence) per 16 inserts.
  const double lines_per_insert = static_cast<double>(ins.lines_flushed) / 20000.0;
  EXPECT_GT(lines_per_insert, 1.0);
  EXPECT_LT(lines_per_insert, 1.4);
  EXPECT_LT(static_cast<double>(ins.fences) / 20000.0, 1.15);
  EXPECT_EQ(upd.lines_flushed, 1000u);
  EXPECT_EQ(upd.fences, 1000u);
  EXPECT_GE(del.lines_flushed, 1000u);
  EXPECT_LE(del.lines_flushed, 2000u);
  Model model;
  for (std::size_t i = 1000; i < dense.size(); ++i) model[be64(dense[i])] = items[i];
  for (std::size_t i = 0; i < 1000; ++i) h.free_item(items[i]);
  EXPECT_EQ(h.contents(), model);
  EXPECT_EQ(h.check(), "");
}

}  // namespace
}  // namespace pmcached::engine::testing

// The benchmarks' load phase in miniature: threads take the next key from a shared counter and
// insert it, so keys arrive ascending but slightly out of order. Edge splits (separator.h) must
// still leave the leaves behind the load full, and the tree must check (run under TSan too).
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine/bptree/btree.h"
#include "engine/bptree/separator.h"
#include "tests/bptree/btree_harness.h"
#include "tests/bptree/page_fill.h"

namespace pmcached::engine::bptree {
namespace {

using buffer::PageTableKind;
using testing::HarnessOptions;
using testing::TreeHarness;

class BTreeFillConcurrencyTest : public ::testing::TestWithParam<PageTableKind> {};

TEST_P(BTreeFillConcurrencyTest, AnAscendingLoadFromTwoThreadsFillsTheLeavesBehindIt) {
  constexpr std::size_t kPageSize = 16384;
  constexpr int kKeys = 6000;
  HarnessOptions o;
  o.page_table = GetParam();
  o.page_size = kPageSize;
  o.frames = 32;
  TreeHarness h(o);
  std::atomic<int> next{0};
  std::atomic<int> failures{0};
  auto loader = [&] {
    const std::string value(100, 'v');
    char key[32];
    for (int i = next.fetch_add(1); i < kKeys; i = next.fetch_add(1)) {
      std::snprintf(key, sizeof key, "mykey_rand%012d", i);
      if (h.put(key, value) != WriteStatus::kInserted) ++failures;
    }
  };
  std::thread a(loader);
  std::thread b(loader);
  a.join();
  b.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_EQ(h.tree().check(), "");
  EXPECT_EQ(h.tree().size(), static_cast<std::size_t>(kKeys));

  std::vector<double> behind = testing::level_fills(h, kPageSize).back();
  ASSERT_GE(behind.size(), 40u);
  behind.pop_back();  // the last leaf, where the load ended
  // A key that arrives late finds the tenth left free; a page would split in the middle only if
  // more late keys came to it than that tenth holds (8 of these entries), which two threads
  // taking one key at a time can hardly do.
  EXPECT_GE(testing::mean(behind), kEdgeFillTenths / 10.0 - 0.03);
  const BTreeStats stats = h.tree().stats();
  EXPECT_GE(stats.edge_splits * 10, stats.splits * 9);
}

INSTANTIATE_TEST_SUITE_P(PageTables, BTreeFillConcurrencyTest,
                         ::testing::Values(PageTableKind::kHash, PageTableKind::kSwizzle),
                         [](const ::testing::TestParamInfo<PageTableKind>& param_info) {
                           return std::string(buffer::page_table_name(param_info.param));
                         });

}  // namespace
}  // namespace pmcached::engine::bptree

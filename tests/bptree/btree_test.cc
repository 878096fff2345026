// The B+-tree over a buffer pool far smaller than its data, for both page tables: against a
// std::map model, with check() after every batch.
#include "engine/bptree/btree.h"

#include <algorithm>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/bptree/separator.h"
#include "tests/bptree/btree_harness.h"

namespace pmcached::engine::bptree {
namespace {

using buffer::PageTableKind;
using testing::HarnessOptions;
using testing::TreeHarness;
using testing::TreeKind;

// A value whose bytes say which key and version they belong to.
std::string make_value(std::string_view key, int version, std::size_t size) {
  std::string seed(key);
  seed += '#';
  seed += std::to_string(version);
  seed += '#';
  std::string value;
  value.reserve(size);
  while (value.size() < size) value += seed;
  value.resize(size);
  return value;
}

std::string numbered(const char* prefix, int i, int width = 6) {
  std::string digits = std::to_string(i);
  std::string key(prefix);
  key.append(static_cast<std::size_t>(width) - std::min<std::size_t>(width, digits.size()), '0');
  key += digits;
  return key;
}

std::map<std::string, std::string> scan_all(BTree& tree, std::string_view from = {},
                                            std::size_t prefix = SIZE_MAX) {
  std::map<std::string, std::string> seen;
  std::string last;
  tree.scan(from, prefix, [&](std::string_view key, std::span<const std::byte> head) {
    EXPECT_TRUE(seen.empty() || std::string(key) > last) << "scan out of order at " << key;
    last = key;
    seen.emplace(key, std::string(reinterpret_cast<const char*>(head.data()), head.size()));
    return true;
  });
  return seen;
}

class BTreeTest : public ::testing::TestWithParam<TreeKind> {
 protected:
  HarnessOptions options(std::size_t frames = 16) const {
    HarnessOptions o;
    o.page_table = GetParam().page_table;
    o.b2_threshold = GetParam().b2_threshold;
    o.frames = frames;
    return o;
  }
};

TEST_P(BTreeTest, AnEmptyTreeHoldsNothingAndChecks) {
  TreeHarness h(options());
  EXPECT_EQ(h.tree().size(), 0u);
  EXPECT_FALSE(h.get("a").has_value());
  EXPECT_TRUE(scan_all(h.tree()).empty());
  EXPECT_EQ(h.tree().check(), "");
  EXPECT_EQ(h.tree().stats().height, 1u);
}

TEST_P(BTreeTest, InsertsInEveryOrderSplitTheRootAndKeepEveryKey) {
  for (int order = 0; order < 3; ++order) {
    TreeHarness h(options());
    std::vector<int> ids(1500);
    for (int i = 0; i < 1500; ++i) ids[i] = i;
    if (order == 1) std::reverse(ids.begin(), ids.end());
    if (order == 2) std::shuffle(ids.begin(), ids.end(), std::mt19937(7));
    for (int i : ids) {
      const std::string key = numbered("key", i);
      ASSERT_EQ(h.put(key, make_value(key, 0, 60)), WriteStatus::kInserted) << key;
    }
    EXPECT_EQ(h.tree().check(), "") << "order " << order;
    EXPECT_EQ(h.tree().size(), 1500u);
    EXPECT_GE(h.tree().stats().height, 2u);
    EXPECT_GE(h.tree().stats().root_splits, 1u);
    for (int i = 0; i < 1500; ++i) {
      const std::string key = numbered("key", i);
      ASSERT_EQ(h.get(key), make_value(key, 0, 60)) << key;
    }
    EXPECT_FALSE(h.get("key").has_value());
    EXPECT_FALSE(h.get("key9999999").has_value());
  }
}

// URL keys whose paths share far more than a head's bytes after any byte the embedded tree
// decides on: every key is found (b2tree: through its range's skip and 7-byte infix), check()
// agrees with every head, and a head changed behind the tree's back is reported.
TEST_P(BTreeTest, LongSharedPathsAreFoundAndAWrongHeadIsCaught) {
  TreeHarness h(options(64));
  std::vector<std::string> keys;
  for (int i = 0; i < 2000; ++i) {
    keys.push_back("https://www.example.org/usr/share/doc/lib" + std::to_string(i % 37) +
                   "-package/changelog.Debian." + std::to_string(i) + ".gz");
  }
  std::shuffle(keys.begin(), keys.end(), std::mt19937(5));
  for (const std::string& key : keys) {
    ASSERT_EQ(h.put(key, make_value(key, 0, 20)), WriteStatus::kInserted) << key;
  }
  ASSERT_EQ(h.tree().check(), "");
  for (const std::string& key : keys) ASSERT_EQ(h.get(key), make_value(key, 0, 20)) << key;
  EXPECT_FALSE(h.get("https://www.example.org/usr/share/doc/lib1-package/changelog.Debian.gz"));
  {
    buffer::PageGuard root = h.buffers().fix(h.tree().meta().root, buffer::LatchMode::kExclusive);
    const Node node(root.data(), h.buffers().page_size());
    ASSERT_GT(node.count(), 0u);
    ASSERT_EQ(node.wide_slots(), GetParam().b2_threshold > 0);
    // The head's lowest byte: at 8 in a narrow slot, at 5 in a wide one (after the key length).
    root.data()[node.slots_offset() + (node.wide_slots() ? 5 : 8)] ^= std::byte{1};
  }
  EXPECT_NE(h.tree().check().find("head differs from the key"), std::string::npos);
}

TEST_P(BTreeTest, ReplaceReturnsReplacedAndKeepsTheCount) {
  TreeHarness h(options());
  ASSERT_EQ(h.put("k", "one"), WriteStatus::kInserted);
  ASSERT_EQ(h.put("k", "two!"), WriteStatus::kReplaced);
  EXPECT_EQ(h.get("k"), "two!");
  EXPECT_EQ(h.tree().size(), 1u);
  EXPECT_EQ(h.tree().check(), "");
}

TEST_P(BTreeTest, SplitsSendUpShortSeparators) {
  TreeHarness h(options());
  // 146-byte keys: a 40-byte common prefix, 6 digits, then 100 bytes that never decide the
  // order. A separator needs one byte past where two neighbours differ: at most 46 bytes.
  const std::string common(40, 'p');
  const std::string tail(100, 't');
  std::vector<int> ids(1500);
  for (int i = 0; i < 1500; ++i) ids[i] = i;
  std::shuffle(ids.begin(), ids.end(), std::mt19937(5));
  for (int i : ids)
    ASSERT_EQ(h.put(numbered(common.c_str(), i) + tail, "v"), WriteStatus::kInserted);
  ASSERT_EQ(h.tree().check(), "");
  ASSERT_GE(h.tree().stats().height, 3u);
  // Every separator in the two upper levels.
  std::vector<PageId> pages = {h.tree().root()};
  std::size_t separators = 0;
  for (std::size_t n = 0; n < pages.size(); ++n) {
    const buffer::PageGuard page = h.buffers().fix(pages[n], buffer::LatchMode::kShared);
    const Node node(page.data(), 4096);
    if (!node.is_inner()) continue;
    for (std::size_t i = 0; i < node.count(); ++i) {
      EXPECT_LE(node.key(i).size(), common.size() + 6) << "page " << pages[n] << " slot " << i;
      ++separators;
    }
    if (node.level() > 1) {
      for (std::size_t i = 0; i <= node.count(); ++i) {
        pages.push_back(
            h.buffers().child_id(load_value<std::uint64_t>(page.data() + node.child_offset(i))));
      }
    }
  }
  EXPECT_GT(separators, 20u);
}

TEST_P(BTreeTest, LongAndBinaryKeysKeepByteOrder) {
  TreeHarness h(options());
  std::map<std::string, std::string> model;
  std::mt19937 rng(3);
  for (int i = 0; i < 800; ++i) {
    std::string key(1 + rng() % kMaxKeySize, '\0');
    for (auto& c : key) c = static_cast<char>(rng() % 4 == 0 ? 0 : rng() % 256);
    if (i % 5 == 0) key = std::string(kMaxKeySize - 1, 'x') + static_cast<char>(i % 256);
    model[key] = make_value(key, i, 1 + rng() % 100);
    (void)h.put(key, model[key]);
  }
  EXPECT_EQ(h.tree().check(), "");
  EXPECT_EQ(scan_all(h.tree()), model);
}

TEST_P(BTreeTest, OverflowRecordsRoundTripAndTheirPagesAreReused) {
  TreeHarness h(options());
  const std::size_t threshold = max_inline_payload(4096);
  for (std::size_t size : {threshold, threshold + 1, std::size_t{4096}, std::size_t{20000}}) {
    const std::string key = "size" + std::to_string(size);
    ASSERT_EQ(h.put(key, make_value(key, 1, size)), WriteStatus::kInserted);
    EXPECT_EQ(h.get(key), make_value(key, 1, size));
  }
  EXPECT_EQ(h.tree().stats().overflow_records_written, 3u);
  EXPECT_EQ(h.tree().check(), "");
  // Big -> small -> big again, and erase: the chains go to the free list and come back.
  ASSERT_EQ(h.put("size20000", "small now"), WriteStatus::kReplaced);
  EXPECT_EQ(h.get("size20000"), "small now");
  EXPECT_EQ(h.tree().check(), "");
  const MetaFields after_free = h.tree().meta();
  EXPECT_GE(after_free.free_count, overflow_pages(20000, 4096));  // the chain, on the list
  ASSERT_EQ(h.put("size4096", make_value("size4096", 2, 9000)), WriteStatus::kReplaced);
  EXPECT_EQ(h.get("size4096"), make_value("size4096", 2, 9000));
  ASSERT_TRUE(h.erase(std::string("size") + std::to_string(threshold + 1)));
  EXPECT_EQ(h.tree().check(), "");
  ASSERT_EQ(h.put("again", make_value("again", 3, 15000)), WriteStatus::kInserted);
  EXPECT_EQ(h.tree().meta().high_water, after_free.high_water);  // reused, not grown
  EXPECT_EQ(h.get("again"), make_value("again", 3, 15000));
  EXPECT_EQ(h.tree().check(), "");
}

// Reads of resident pages go without latches (the buffer manager's optimistic reads) and count
// nothing; a record in an overflow chain is read with latches, and counted.
TEST_P(BTreeTest, ResidentReadsNeedNoLatchesButOverflowChainsDo) {
  TreeHarness h(options(512));
  for (int i = 0; i < 1500; ++i) {
    const std::string key = numbered("key", i);
    ASSERT_EQ(h.put(key, make_value(key, 0, 60)), WriteStatus::kInserted);
  }
  ASSERT_GE(h.tree().stats().height, 2u);
  // kSwizzle: a reference a split left unswizzled sends its first reader to the latched path,
  // which swizzles it; one pass makes every path swizzled.
  for (int i = 0; i < 1500; ++i) ASSERT_TRUE(h.get(numbered("key", i)).has_value());
  const std::uint64_t before = h.tree().stats().latched_reads;
  for (int i = 0; i < 1500; ++i) {
    const std::string key = numbered("key", i);
    ASSERT_EQ(h.get(key), make_value(key, 0, 60));
  }
  EXPECT_FALSE(h.get("key").has_value());
  EXPECT_FALSE(h.get("key9999999").has_value());
  EXPECT_EQ(h.tree().stats().latched_reads, before);
  ASSERT_EQ(h.put("chained", make_value("chained", 1, 20000)), WriteStatus::kInserted);
  EXPECT_EQ(h.get("chained"), make_value("chained", 1, 20000));
  EXPECT_EQ(h.tree().stats().latched_reads, before + 1);
}

TEST_P(BTreeTest, PatchOverwritesBytesInPlace) {
  TreeHarness h(options());
  std::string small = make_value("s", 0, 100);
  std::string big = make_value("b", 0, 10000);
  ASSERT_EQ(h.put("s", small), WriteStatus::kInserted);
  ASSERT_EQ(h.put("b", big), WriteStatus::kInserted);
  ASSERT_TRUE(h.patch("s", 10, "PATCH"));
  small.replace(10, 5, "PATCH");
  EXPECT_EQ(h.get("s"), small);
  // In the overflow prefix, across the prefix and the chain, across two chain pages, at the end.
  for (std::size_t offset :
       {std::size_t{8}, kOverflowPrefix - 3, std::size_t{4090}, std::size_t{9990}}) {
    const std::string bytes = "0123456789";
    ASSERT_TRUE(h.patch("b", offset, bytes)) << offset;
    big.replace(offset, bytes.size(), bytes);
    EXPECT_EQ(h.get("b"), big) << offset;
  }
  EXPECT_FALSE(h.patch("s", 96, "12345"));  // past the end
  EXPECT_FALSE(h.patch("b", 9995, "123456"));
  EXPECT_FALSE(h.patch("absent", 0, "x"));
  EXPECT_EQ(h.get("s"), small);
  // The scan's head of an overflow record comes from the leaf's prefix, patched too.
  const auto heads = scan_all(h.tree(), "", 16);
  EXPECT_EQ(heads.at("b"), big.substr(0, 16));
  EXPECT_EQ(h.tree().check(), "");
}

TEST_P(BTreeTest, ScanStartsAtAKeyAndStopsWhenAsked) {
  TreeHarness h(options());
  std::map<std::string, std::string> model;
  for (int i = 0; i < 2000; i += 2) {
    const std::string key = numbered("k", i);
    model[key] = make_value(key, 0, 30 + i % 50);
    ASSERT_EQ(h.put(key, model[key]), WriteStatus::kInserted);
  }
  // From an absent key, with 8-byte heads.
  const auto seen = scan_all(h.tree(), numbered("k", 1001), 8);
  std::map<std::string, std::string> expected;
  for (auto it = model.lower_bound(numbered("k", 1001)); it != model.end(); ++it) {
    expected[it->first] = it->second.substr(0, 8);
  }
  EXPECT_EQ(seen, expected);
  // From a present key: included.
  EXPECT_EQ(scan_all(h.tree(), numbered("k", 1000), 0).begin()->first, numbered("k", 1000));
  int visited = 0;
  h.tree().scan("", 0, [&](std::string_view, std::span<const std::byte>) { return ++visited < 5; });
  EXPECT_EQ(visited, 5);
  EXPECT_TRUE(scan_all(h.tree(), "l").empty());
}

TEST_P(BTreeTest, ErasingEverythingMergesBackToOneLeaf) {
  TreeHarness h(options());
  std::vector<int> ids(3000);
  for (int i = 0; i < 3000; ++i) ids[i] = i;
  // Keys long enough for three levels even though the ascending load fills its pages.
  const char* prefix = "key-long-enough-for-a-third-level-";
  for (int i : ids) {
    ASSERT_EQ(h.put(numbered(prefix, i), make_value("v", i, 50 + i % 100)), WriteStatus::kInserted);
  }
  ASSERT_GE(h.tree().stats().height, 3u);
  std::shuffle(ids.begin(), ids.end(), std::mt19937(9));
  for (std::size_t n = 0; n < ids.size(); ++n) {
    ASSERT_TRUE(h.erase(numbered(prefix, ids[n])));
    ASSERT_FALSE(h.erase(numbered(prefix, ids[n])));
    if (n % 500 == 0) {
      ASSERT_EQ(h.tree().check(), "") << n;
    }
  }
  EXPECT_EQ(h.tree().check(), "");
  EXPECT_EQ(h.tree().size(), 0u);
  EXPECT_EQ(h.tree().stats().height, 1u);
  EXPECT_GT(h.tree().stats().merges, 0u);
  // Every page but the meta page and the root is free again.
  const MetaFields meta = h.tree().meta();
  EXPECT_EQ(meta.free_pages(), meta.high_water - 3);
  EXPECT_GT(meta.stack_size, 0u);  // the tree pages
}

TEST_P(BTreeTest, FreedTreePagesBeyondTheStackJoinTheList) {
  TreeHarness h(options());
  // 1700-byte records, one or two to a leaf: more leaves than the free stack holds.
  constexpr int kKeys = 1000;
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_EQ(h.put(numbered("key", i), make_value("v", i, 1700)), WriteStatus::kInserted);
  }
  for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(h.erase(numbered("key", i)));
  EXPECT_EQ(h.tree().check(), "");
  const MetaFields freed = h.tree().meta();
  EXPECT_EQ(freed.stack_size, MetaPage::stack_capacity(4096));
  EXPECT_GT(freed.free_count, 0u);
  EXPECT_EQ(freed.free_pages(), freed.high_water - 3);
  // Freed pages, from the stack and from the list, come back before the file grows.
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_EQ(h.put(numbered("key", i), make_value("w", i, 1700)), WriteStatus::kInserted);
  }
  EXPECT_EQ(h.tree().meta().high_water, freed.high_water);
  EXPECT_EQ(h.tree().check(), "");
  EXPECT_EQ(h.get(numbered("key", 77)), make_value("w", 77, 1700));
}

TEST_P(BTreeTest, RandomOperationsAgreeWithAModel) {
  TreeHarness h(options());
  std::map<std::string, std::string> model;
  std::mt19937 rng(GetParam().page_table == PageTableKind::kHash ? 1 + GetParam().b2_threshold : 2);
  const std::size_t threshold = max_inline_payload(4096);
  auto random_key = [&] {
    const int i = static_cast<int>(rng() % 2500);
    // Some long keys, to make inner pages fill and split too.
    return i % 7 == 0 ? numbered(std::string(180, 'L').c_str(), i) : numbered("key", i);
  };
  auto random_size = [&]() -> std::size_t {
    const unsigned r = rng() % 100;
    if (r < 3) return threshold + rng() % 6000;  // an overflow record
    if (r < 10) return 500 + rng() % 1200;       // large, inline
    return rng() % 200;
  };
  for (int batch = 0; batch < 12; ++batch) {
    for (int op = 0; op < 500; ++op) {
      const std::string key = random_key();
      const unsigned what = rng() % 10;
      if (what < 5) {
        const std::string value = make_value(key, batch * 1000 + op, random_size());
        const WriteStatus status = h.put(key, value);
        ASSERT_EQ(status, model.count(key) ? WriteStatus::kReplaced : WriteStatus::kInserted);
        model[key] = value;
      } else if (what < 8) {
        ASSERT_EQ(h.erase(key), model.erase(key) == 1) << key;
      } else if (what < 9) {
        auto it = model.find(key);
        const bool present = it != model.end();
        const std::size_t size = present ? it->second.size() : 0;
        const std::size_t offset = size > 4 ? rng() % (size - 4) : 0;
        const bool fits = present && size >= 4;
        ASSERT_EQ(h.patch(key, offset, "PTCH"), fits) << key;
        if (fits) it->second.replace(offset, 4, "PTCH");
      } else {
        auto it = model.find(key);
        ASSERT_EQ(h.get(key), it == model.end() ? std::nullopt : std::optional(it->second)) << key;
      }
    }
    ASSERT_EQ(h.tree().check(), "") << "batch " << batch;
    ASSERT_EQ(h.tree().size(), model.size());
  }
  EXPECT_EQ(scan_all(h.tree()), model);
  const BTreeStats tree_stats = h.tree().stats();
  // The operations reached every structure change: leaf and inner splits (a second root split
  // means an inner root split), merges, borrows, overflow chains.
  EXPECT_GT(tree_stats.splits, 0u);
  EXPECT_GE(tree_stats.root_splits, 2u);
  EXPECT_GT(tree_stats.merges, 0u);
  EXPECT_GT(tree_stats.borrows, 0u);
  EXPECT_GT(tree_stats.overflow_records_written, 0u);
  // The data is many times the pool (16 frames of 4 KiB): the pool evicted and read back.
  const buffer::BufferStats stats = h.buffers().stats();
  EXPECT_GT(stats.evictions, 100u);
  EXPECT_GT(h.tree().meta().high_water, 10 * 16u);
  h.reopen();  // the page images on the file hold the whole tree
  EXPECT_EQ(h.tree().check(), "");
  EXPECT_EQ(scan_all(h.tree()), model);
}

TEST_P(BTreeTest, AFullPageFileRefusesWritesAndChangesNothing) {
  HarnessOptions o = options();
  o.max_bytes = 64 * 4096;  // 63 engine pages
  TreeHarness h(o);
  std::map<std::string, std::string> model;
  int i = 0;
  for (;; ++i) {
    const std::string key = numbered("key", i);
    const std::string value = make_value(key, 0, i % 10 == 0 ? 3000 : 300);
    const WriteStatus status = h.put(key, value);
    if (status == WriteStatus::kFull) break;
    ASSERT_EQ(status, WriteStatus::kInserted);
    model[key] = value;
  }
  ASSERT_GT(model.size(), 100u);
  EXPECT_EQ(h.tree().check(), "");
  EXPECT_EQ(h.tree().size(), model.size());
  EXPECT_EQ(scan_all(h.tree()), model);
  // Room comes back with erases.
  for (int k = 0; k < 50; ++k) {
    ASSERT_TRUE(h.erase(numbered("key", k)));
    model.erase(numbered("key", k));
  }
  EXPECT_EQ(h.put("fresh", "value"), WriteStatus::kInserted);
  model["fresh"] = "value";
  EXPECT_EQ(h.tree().check(), "");
  EXPECT_EQ(scan_all(h.tree()), model);
}

// The meta page names the layout of the file's pages: a b2tree file (wide slots) is not read as
// a bptree one, nor the reverse (nor a b2tree file of an older layout: versions 1 and 2).
TEST_P(BTreeTest, APageFileOfTheOtherPageLayoutIsRefused) {
  TreeHarness h(options());
  ASSERT_EQ(h.put("key", "value"), WriteStatus::kInserted);
  EXPECT_NO_THROW(BTree(h.buffers(), GetParam().b2_threshold).load());
  BTree other(h.buffers(), GetParam().b2_threshold > 0 ? 0 : 32);
  EXPECT_THROW(other.load(), std::runtime_error);
}

TEST_P(BTreeTest, ReopenFindsTheTreeOnThePageFile) {
  TreeHarness h(options());
  for (int i = 0; i < 1500; ++i) {
    ASSERT_EQ(h.put(numbered("key", i), make_value("v", i, 40 + (i == 7 ? 5000 : 0))),
              WriteStatus::kInserted);
  }
  h.reopen();
  EXPECT_EQ(h.tree().size(), 1500u);
  EXPECT_EQ(h.tree().check(), "");
  for (int i = 0; i < 1500; ++i) {
    ASSERT_EQ(h.get(numbered("key", i)), make_value("v", i, 40 + (i == 7 ? 5000 : 0)));
  }
}

INSTANTIATE_TEST_SUITE_P(Trees, BTreeTest, testing::kTreeKinds, testing::tree_kind_name);

}  // namespace
}  // namespace pmcached::engine::bptree

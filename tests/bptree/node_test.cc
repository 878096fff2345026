// The slotted page: search, insert, erase, replace and compaction on leaf and inner pages, and
// that every change goes through PageChanges (replaying the logged ranges onto the old image
// gives the new one).
#include "engine/bptree/node.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/b2tree/embedded_tree.h"
#include "engine/bptree/meta_page.h"
#include "engine/bptree/overflow.h"
#include "tests/bptree/btree_harness.h"

namespace pmcached::engine::bptree {
namespace {

using testing::bytes_of;
std::string string_of(std::span<const std::byte> b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// A page in memory with a shadow copy that only sees the logged ranges.
class TestPage {
 public:
  explicit TestPage(std::size_t page_size = 4096)
      : size_(page_size), words_(page_size / 8), shadow_(page_size / 8) {
    begin();
  }
  std::byte* data() { return reinterpret_cast<std::byte*>(words_.data()); }
  PageChanges& changes() { return *changes_; }
  NodeWriter writer() { return NodeWriter(*changes_); }
  Node node() { return Node(data(), size_); }

  // Applies the moves and ranges logged since begin() to the shadow, as replay does, and starts
  // a new change set; the shadow must then equal the page.
  ::testing::AssertionResult replay_matches() {
    auto* shadow = reinterpret_cast<std::byte*>(shadow_.data());
    if (changes_->whole()) {
      std::memcpy(shadow, data(), size_);
    } else {
      for (const buffer::ByteMove& m : changes_->moves()) {
        std::memmove(shadow + m.to, shadow + m.from, m.length);
      }
      for (const buffer::ByteRange& r : changes_->ranges()) {
        std::memcpy(shadow + r.offset, data() + r.offset, r.length);
      }
    }
    begin();
    if (std::memcmp(shadow, data(), size_) != 0) {
      return ::testing::AssertionFailure() << "a change bypassed PageChanges";
    }
    return ::testing::AssertionSuccess();
  }

 private:
  void begin() { changes_ = std::make_unique<PageChanges>(7, data(), size_); }

  std::size_t size_;
  std::vector<std::uint64_t> words_;
  std::vector<std::uint64_t> shadow_;
  std::unique_ptr<PageChanges> changes_;
};

// Inserts `key` at its place; returns false if it did not fit.
bool put(NodeWriter node, std::string_view key, std::string_view payload) {
  const SearchResult r = node.search(key);
  if (r.found) return node.replace_payload(r.index, bytes_of(payload), 0);
  return node.insert(r.index, key, bytes_of(payload));
}

// The page's keys in slot order, and a check that the slots are sorted with correct heads.
std::vector<std::string> keys_of(Node node) {
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < node.count(); ++i) {
    keys.emplace_back(node.key(i));
    EXPECT_EQ(node.slot(i).head, key_head(node.key(i))) << "slot " << i;
    if (i > 0) {
      EXPECT_LT(keys[i - 1], keys[i]) << "slot " << i;
    }
  }
  return keys;
}

TEST(NodeTest, InitMakesAnEmptyNode) {
  TestPage page;
  page.writer().init(NodeKind::kLeaf, 0);
  EXPECT_TRUE(page.replay_matches());
  const Node node = page.node();
  EXPECT_TRUE(node.is_leaf());
  EXPECT_EQ(node.count(), 0u);
  EXPECT_EQ(node.link(), 0u);
  EXPECT_EQ(node.free_total(), node_capacity(4096));
  EXPECT_EQ(node.used(), 0u);
  EXPECT_FALSE(node.search("a").found);
}

TEST(NodeTest, InsertFindAndEraseAtEveryPosition) {
  constexpr int kKeys = 20;
  for (int position = 0; position <= kKeys; ++position) {
    TestPage page;
    NodeWriter node = page.writer();
    node.init(NodeKind::kLeaf, 0);
    std::vector<std::string> keys;
    for (int i = 0; i < kKeys; ++i) keys.push_back("key" + std::to_string(1001 + 2 * i));
    for (const auto& k : keys) ASSERT_TRUE(put(node, k, "v" + k));
    // One key that sorts at `position` among the others.
    const std::string extra = "key" + std::to_string(1000 + 2 * position);
    ASSERT_TRUE(put(node, extra, "extra"));
    EXPECT_TRUE(page.replay_matches());
    const SearchResult r = page.node().search(extra);
    ASSERT_TRUE(r.found);
    EXPECT_EQ(r.index, static_cast<std::size_t>(position));
    EXPECT_EQ(string_of(page.node().payload(r.index)), "extra");
    for (const auto& k : keys) {
      const SearchResult f = page.node().search(k);
      ASSERT_TRUE(f.found) << k;
      EXPECT_EQ(string_of(page.node().payload(f.index)), "v" + k);
    }
    page.writer().erase(r.index);
    EXPECT_TRUE(page.replay_matches());
    EXPECT_FALSE(page.node().search(extra).found);
    EXPECT_EQ(keys_of(page.node()), keys);
  }
}

TEST(NodeTest, EraseAtEveryPositionKeepsTheOthers) {
  for (std::size_t position = 0; position < 10; ++position) {
    TestPage page;
    page.writer().init(NodeKind::kLeaf, 0);
    std::vector<std::string> keys;
    for (int i = 0; i < 10; ++i) keys.push_back(std::string(1, static_cast<char>('a' + i)));
    for (const auto& k : keys) ASSERT_TRUE(put(page.writer(), k, k + k));
    page.writer().erase(position);
    EXPECT_TRUE(page.replay_matches());
    keys.erase(keys.begin() + static_cast<std::ptrdiff_t>(position));
    EXPECT_EQ(keys_of(page.node()), keys);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      EXPECT_EQ(string_of(page.node().payload(i)), keys[i] + keys[i]);
    }
  }
}

TEST(NodeTest, KeysThatArePrefixesOfEachOtherSortShortestFirst) {
  TestPage page;
  page.writer().init(NodeKind::kLeaf, 0);
  // Equal heads ("a" and "a\0" both give 0x61000000) must fall back to the whole key.
  const std::vector<std::string> keys = {
      std::string("a"),    std::string("a\0", 2), std::string("a\0\0", 3),  std::string("ab"),
      std::string("abc"),  std::string("abcd"),   std::string("abcd\0", 5), std::string("abcde"),
      std::string("abce"), std::string("b")};
  std::vector<std::string> shuffled = keys;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(3));
  for (const auto& k : shuffled) ASSERT_TRUE(put(page.writer(), k, k));
  EXPECT_EQ(keys_of(page.node()), keys);
  for (const auto& k : keys) {
    const SearchResult r = page.node().search(k);
    ASSERT_TRUE(r.found);
    EXPECT_EQ(page.node().key(r.index), k);
  }
  EXPECT_EQ(page.node().search(std::string("abcd\0\0", 6)).index, 7u);  // after "abcd\0"
}

TEST(NodeTest, BinaryKeysWithZeroAndHighBytesSortAsUnsignedBytes) {
  TestPage page;
  page.writer().init(NodeKind::kLeaf, 0);
  std::mt19937 rng(11);
  std::map<std::string, std::string> model;
  for (int i = 0; i < 60; ++i) {
    std::string key(1 + rng() % 12, '\0');
    for (auto& c : key) c = static_cast<char>(rng() % 3 == 0 ? 0 : rng() % 256);
    model[key] = std::to_string(i);
    ASSERT_TRUE(put(page.writer(), key, model[key]));
  }
  std::vector<std::string> expected;
  for (const auto& [k, v] : model) expected.push_back(k);  // std::string orders as unsigned bytes
  EXPECT_EQ(keys_of(page.node()), expected);
  for (const auto& [k, v] : model) {
    const SearchResult r = page.node().search(k);
    ASSERT_TRUE(r.found);
    EXPECT_EQ(string_of(page.node().payload(r.index)), v);
  }
}

TEST(NodeTest, LongestKeysDifferingOnlyInTheLastByte) {
  TestPage page;
  page.writer().init(NodeKind::kLeaf, 0);
  std::vector<std::string> keys;
  for (int i = 0; i < 14; ++i) {
    keys.push_back(std::string(kMaxKeySize - 1, 'k') + static_cast<char>('a' + i));
  }
  std::vector<std::string> order = keys;
  std::reverse(order.begin(), order.end());
  std::size_t stored = 0;
  for (const auto& k : order) stored += put(page.writer(), k, "payload") ? 1 : 0;
  // A 4 KiB page holds 15 entries of 12 + 250 + 7 bytes: all 14 fit, and a 16th would not.
  EXPECT_EQ(stored, keys.size());
  EXPECT_EQ(keys_of(page.node()), keys);
  EXPECT_TRUE(page.replay_matches());
  EXPECT_TRUE(put(page.writer(), std::string(kMaxKeySize, 'z'), "payload"));
  EXPECT_FALSE(put(page.writer(), std::string(kMaxKeySize, 'y'), "payload"));
}

TEST(NodeTest, InsertCompactsWhenOnlyDeadRecordsLeaveRoom) {
  TestPage page;
  page.writer().init(NodeKind::kLeaf, 0);
  const std::string value(100, 'v');
  int n = 0;
  while (put(page.writer(), "key" + std::to_string(1000 + n), value)) ++n;
  ASSERT_GT(n, 10);
  // Erase every other entry, from the back so that no dead record is the lowest one.
  for (int i = n - 2; i >= 0; i -= 2) page.writer().erase(static_cast<std::size_t>(i));
  EXPECT_TRUE(page.replay_matches());
  EXPECT_GT(page.node().fragmented(), 0u);
  EXPECT_LT(page.node().free_contiguous(), 300u);
  // 300 bytes fit only after a compaction.
  ASSERT_TRUE(put(page.writer(), "big", std::string(300, 'b')));
  EXPECT_TRUE(page.replay_matches());
  EXPECT_EQ(page.node().fragmented(), 0u);
  EXPECT_EQ(string_of(page.node().payload(page.node().search("big").index)), std::string(300, 'b'));
  for (int i = 1; i < n; i += 2) {
    const SearchResult r = page.node().search("key" + std::to_string(1000 + i));
    ASSERT_TRUE(r.found) << i;
    EXPECT_EQ(string_of(page.node().payload(r.index)), value);
  }
}

TEST(NodeTest, ErasingTheLowestRecordGrowsTheGapInsteadOfFragmenting) {
  TestPage page;
  page.writer().init(NodeKind::kLeaf, 0);
  ASSERT_TRUE(put(page.writer(), "a", "1111"));
  ASSERT_TRUE(put(page.writer(), "b", "2222"));  // written last: the lowest record
  const std::size_t start = page.node().data_start();
  page.writer().erase(page.node().search("b").index);
  EXPECT_EQ(page.node().fragmented(), 0u);
  EXPECT_EQ(page.node().data_start(), start + 5);
  page.writer().erase(0);
  EXPECT_EQ(page.node().free_total(), node_capacity(4096));
}

TEST(NodeTest, ReplacePayloadInPlaceChangesOnlyThePayloadBytes) {
  TestPage page;
  page.writer().init(NodeKind::kLeaf, 0);
  ASSERT_TRUE(put(page.writer(), "alpha", "11111111"));
  ASSERT_TRUE(put(page.writer(), "beta", "22222222"));
  EXPECT_TRUE(page.replay_matches());
  ASSERT_TRUE(page.writer().replace_payload(0, bytes_of("33333333"), 0));
  EXPECT_EQ(page.changes().changed_bytes(), 8u);
  EXPECT_TRUE(page.replay_matches());
  // Another size: the record moves; the key stays.
  ASSERT_TRUE(page.writer().replace_payload(0, bytes_of("444"), kOverflowRecord));
  EXPECT_TRUE(page.replay_matches());
  EXPECT_EQ(page.node().key(0), "alpha");
  EXPECT_EQ(string_of(page.node().payload(0)), "444");
  EXPECT_EQ(page.node().flags(0), kOverflowRecord);
  page.writer().patch_payload(1, 2, bytes_of("xy"));
  EXPECT_EQ(string_of(page.node().payload(1)), "22xy2222");
  EXPECT_TRUE(page.replay_matches());
}

TEST(NodeTest, ReplacePayloadThatDoesNotFitChangesNothing) {
  TestPage page;
  page.writer().init(NodeKind::kLeaf, 0);
  ASSERT_TRUE(put(page.writer(), "a", std::string(1500, 'a')));
  ASSERT_TRUE(put(page.writer(), "b", std::string(1500, 'b')));
  EXPECT_TRUE(page.replay_matches());
  EXPECT_FALSE(page.writer().replace_payload(0, bytes_of(std::string(2600, 'c')), 0));
  EXPECT_TRUE(page.changes().empty());
  EXPECT_EQ(string_of(page.node().payload(0)), std::string(1500, 'a'));
}

TEST(NodeTest, InnerChildReferencesStayAlignedWordsThroughCompaction) {
  TestPage page;
  page.writer().init(NodeKind::kInner, 1);
  page.writer().set_child(0, 999);  // count() == 0: the rightmost child
  std::map<std::string, PageId> model;
  std::mt19937 rng(5);
  for (int round = 0; round < 400; ++round) {
    NodeWriter node = page.writer();
    if (rng() % 3 != 0 || model.empty()) {
      const std::string key(1 + rng() % 30, static_cast<char>('a' + rng() % 26));
      const PageId child = 1000 + static_cast<PageId>(round);
      const SearchResult r = node.search(key);
      if (r.found) continue;
      std::byte word[8];
      std::memcpy(word, &child, 8);
      if (node.insert(r.index, key, word)) model[key] = child;
    } else {
      auto it = model.begin();
      std::advance(it, static_cast<std::ptrdiff_t>(rng() % model.size()));
      node.erase(node.search(it->first).index);
      model.erase(it);
    }
    ASSERT_TRUE(page.replay_matches());
  }
  const Node node = page.node();
  ASSERT_EQ(node.count(), model.size());
  std::vector<PageId> expected;
  std::size_t i = 0;
  for (const auto& [key, child] : model) {
    EXPECT_EQ(node.key(i), key);
    EXPECT_EQ(node.child_offset(i) % 8, 0u);
    EXPECT_EQ(load_value<std::uint64_t>(node.page() + node.child_offset(i)), child);
    expected.push_back(child);
    ++i;
  }
  expected.push_back(999);
  std::vector<PageId> visited;
  for_each_child_slot(page.data(), [&](std::uint64_t& slot) {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(&slot) % 8, 0u);
    visited.push_back(slot);
  });
  EXPECT_EQ(visited, expected);
}

TEST(NodeTest, ChildIndexSendsASeparatorsEqualKeyToItsRight) {
  TestPage page;
  page.writer().init(NodeKind::kInner, 1);
  std::byte word[8] = {};
  ASSERT_TRUE(page.writer().insert(0, "g", word));
  ASSERT_TRUE(page.writer().insert(1, "p", word));
  const Node node = page.node();
  EXPECT_EQ(node.child_index("a"), 0u);
  EXPECT_EQ(node.child_index("f\xff"), 0u);
  EXPECT_EQ(node.child_index("g"), 1u);
  EXPECT_EQ(node.child_index("o"), 1u);
  EXPECT_EQ(node.child_index("p"), 2u);
  EXPECT_EQ(node.child_index("zzz"), 2u);
}

TEST(NodeTest, ForEachChildSlotVisitsNothingOnALeaf) {
  TestPage page;
  page.writer().init(NodeKind::kLeaf, 0);
  ASSERT_TRUE(put(page.writer(), "a", "12345678"));
  int visits = 0;
  for_each_child_slot(page.data(), [&](std::uint64_t&) { ++visits; });
  EXPECT_EQ(visits, 0);
}

TEST(NodeTest, RandomOperationsAgreeWithAModel) {
  for (std::size_t page_size : {std::size_t{4096}, std::size_t{65536}}) {
    TestPage page(page_size);
    page.writer().init(NodeKind::kLeaf, 0);
    std::map<std::string, std::string> model;
    std::mt19937 rng(static_cast<unsigned>(page_size));
    for (int op = 0; op < 3000; ++op) {
      NodeWriter node = page.writer();
      std::string key = "k";
      key += std::to_string(rng() % 200);
      if (rng() % 3 == 0) {
        const SearchResult r = node.search(key);
        ASSERT_EQ(r.found, model.count(key) == 1);
        if (r.found) node.erase(r.index);
        model.erase(key);
      } else {
        const std::string value(rng() % (page_size / 40), static_cast<char>('a' + op % 26));
        if (put(node, key, value)) {
          model[key] = value;
        } else {
          EXPECT_GT(entry_size(false, key.size(), value.size()),
                    node.free_total() +
                        (model.count(key) ? node.entry_bytes(node.search(key).index) : 0));
        }
      }
      ASSERT_TRUE(page.replay_matches()) << "op " << op;
      const Node view = page.node();
      ASSERT_EQ(view.count(), model.size());
      std::size_t live = 0;
      for (std::size_t i = 0; i < view.count(); ++i) live += view.entry_bytes(i);
      ASSERT_EQ(view.used(), live) << "op " << op;
    }
    std::size_t i = 0;
    for (const auto& [k, v] : model) {
      EXPECT_EQ(page.node().key(i), k);
      EXPECT_EQ(string_of(page.node().payload(i)), v);
      ++i;
    }
  }
}

TEST(OverflowTest, ReferenceRoundTripsAndKeepsThePrefix) {
  std::string record(5000, 'r');
  for (std::size_t i = 0; i < record.size(); ++i) record[i] = static_cast<char>(i % 251);
  std::byte ref[kOverflowRefSize];
  encode_overflow_ref(OverflowRef{12, 13, record.size()}, bytes_of(record), ref);
  const OverflowRef back = decode_overflow_ref(ref);
  EXPECT_EQ(back.first, 12u);
  EXPECT_EQ(back.last, 13u);
  EXPECT_EQ(back.size, record.size());
  EXPECT_EQ(string_of(overflow_prefix(ref)), record.substr(0, kOverflowPrefix));
}

TEST(OverflowTest, ChainLengthCountsTheBytesPastThePrefix) {
  const std::size_t capacity = overflow_capacity(4096);
  EXPECT_EQ(capacity, 4096u - kSlotsOffset);
  EXPECT_EQ(overflow_pages(kOverflowPrefix + 1, 4096), 1u);
  EXPECT_EQ(overflow_pages(kOverflowPrefix + capacity, 4096), 1u);
  EXPECT_EQ(overflow_pages(kOverflowPrefix + capacity + 1, 4096), 2u);
  EXPECT_LT(max_inline_payload(4096) + kMaxKeySize + kSlotSize, node_capacity(4096) / 2 + 1);
}

TEST(OverflowTest, OverflowPageHoldsItsBytesAndLink) {
  TestPage page;
  const std::string bytes(1000, 'o');
  write_overflow_page(page.changes(), 42, bytes_of(bytes));
  EXPECT_TRUE(page.replay_matches());
  EXPECT_EQ(page.node().kind(), NodeKind::kOverflow);
  EXPECT_EQ(page.node().link(), 42u);
  EXPECT_EQ(string_of(overflow_bytes(page.data())), bytes);
}

TEST(MetaPageTest, FormatThenReadGivesTheFields) {
  TestPage page;
  EXPECT_FALSE(MetaPage::valid(page.data()));
  const MetaFields fields{5, 2, 77, 9, 3, 123456, 4};
  MetaPage::format(page.changes(), fields);
  EXPECT_TRUE(page.replay_matches());
  EXPECT_TRUE(MetaPage::valid(page.data()));
  const MetaFields back = MetaPage::read(page.data());
  EXPECT_EQ(back.root, 5u);
  EXPECT_EQ(back.root_level, 2u);
  EXPECT_EQ(back.high_water, 77u);
  EXPECT_EQ(back.free_head, 9u);
  EXPECT_EQ(back.free_count, 3u);
  EXPECT_EQ(back.items, 123456u);
  EXPECT_EQ(back.stack_size, 4u);
  MetaPage::set_stack_entry(page.changes(), 3, 99);
  EXPECT_EQ(MetaPage::stack_entry(page.data(), 3), 99u);
  EXPECT_EQ(MetaPage::stack_capacity(4096), (4096u - kFreeStack) / 8);
  EXPECT_TRUE(page.replay_matches());
  MetaPage::set(page.changes(), MetaPage::kItems, 7);
  EXPECT_EQ(page.changes().changed_bytes(), 8u);
  EXPECT_EQ(MetaPage::read(page.data()).items, 7u);
}

// b2tree pages (an embedded tree, engine/b2tree): inserts, erases and replaces in random order
// on keys with long shared prefixes, each change logged through PageChanges; after each change
// every key is found at its place, absent keys get their lower bound, and every slot's head holds
// the key bytes after the prefix its range shares (what btree_check verifies on whole trees).
TEST(NodeTest, B2PagesFindEveryKeyThroughTheEmbeddedTree) {
  for (const unsigned threshold : {1u, 4u, 32u}) {
    TestPage page(16384);
    page.writer().init(NodeKind::kLeaf, 0, threshold);
    ASSERT_TRUE(page.replay_matches());
    ASSERT_GT(page.node().tree_bytes(), 0u);
    std::mt19937 rng(threshold);
    const char* hosts[] = {"http://www.example.org/", "http://www.example.org/wiki/",
                           "https://deb.debian.org/debian/pool/main/", "http://a/", "http://"};
    auto random_key = [&] {
      std::string key = hosts[rng() % 5];
      const std::size_t tail = rng() % 12;
      for (std::size_t i = 0; i < tail; ++i) key += static_cast<char>("abz/._\x01\xff"[rng() % 8]);
      return key;
    };
    std::map<std::string, std::string> model;
    for (int step = 0; step < 600; ++step) {
      const std::string key = random_key();
      NodeWriter w = page.writer();
      const SearchResult r = w.search(key);
      ASSERT_EQ(r.found, model.count(key) == 1) << key;
      if (r.found && rng() % 3 == 0) {
        w.erase(r.index);
        model.erase(key);
      } else if (r.found) {
        const std::string value(rng() % 40, 'v');
        if (w.replace_payload(r.index, bytes_of(value), 0)) model[key] = value;  // else: full
      } else if (w.fits(entry_size(false, key.size(), 20))) {
        ASSERT_TRUE(w.insert(r.index, key, bytes_of(std::string(20, 'p'))));
        model[key] = std::string(20, 'p');
      }
      ASSERT_TRUE(page.replay_matches()) << "step " << step;
      const Node n = page.node();
      ASSERT_EQ(n.count(), model.size());
      std::size_t i = 0;
      for (const auto& [k, v] : model) {
        ASSERT_EQ(n.key(i), k);
        ASSERT_EQ(string_of(n.payload(i)), v);
        ASSERT_EQ(n.slot(i).head, key_head_wide(k, n.slot_skip(i))) << "slot " << i;
        const SearchResult found = n.search(k);
        ASSERT_TRUE(found.found && found.index == i) << "step " << step << " key " << k;
        ++i;
      }
      // Absent keys: past a key's end, cut short, a byte changed anywhere (also inside a span or
      // a range's shared prefix, where the tree sends it by a virtual edge or a head misleads).
      std::string changed = random_key();
      changed[rng() % changed.size()] += rng() % 2 == 0 ? 1 : -1;
      const std::string cut = random_key();
      for (const std::string& absent :
           {random_key() + "~", cut.substr(0, rng() % cut.size()), changed}) {
        if (model.count(absent) != 0) continue;
        const auto lower = model.lower_bound(absent);
        const SearchResult r2 = n.search(absent);
        EXPECT_FALSE(r2.found) << absent;
        EXPECT_EQ(r2.index, static_cast<std::size_t>(std::distance(model.begin(), lower)))
            << absent;
      }
    }
    EXPECT_GT(tree_rebuilds().count, 0u);
  }
}

// A range's search compares the slots' heads and reads whole keys only where heads tie: here the
// ranges hold keys that share the 7 head bytes after the range's skip (nine slots tie) beside
// keys whose heads differ; every present key is found at its place and every absent one gets
// its lower bound.
TEST(NodeTest, B2RangesFindKeysWhoseHeadsTieOrDiffer) {
  TestPage page(65536);
  page.writer().init(NodeKind::kLeaf, 0, 32);
  std::vector<std::string> keys;
  for (char group = 'a'; group <= 'z'; ++group) {
    for (int i = 0; i < 9; ++i) {
      keys.push_back(std::string(1, group) + "same-seven-bytes/" + std::to_string(i));  // ties
      keys.push_back(std::string(1, group) + std::to_string(i) + "-distinct-head");     // one each
    }
  }
  std::sort(keys.begin(), keys.end());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    NodeWriter w = page.writer();
    ASSERT_TRUE(w.insert(i, keys[i], bytes_of("v")));
  }
  page.writer().rebuild_tree();
  ASSERT_TRUE(page.replay_matches());
  const Node n = page.node();
  ASSERT_GT(n.tree().size(), 0u);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const SearchResult r = n.search(keys[i]);
    EXPECT_TRUE(r.found && r.index == i) << keys[i];
    for (const std::string& absent :
         {keys[i] + "!", keys[i].substr(0, keys[i].size() - 1) + "~",
          keys[i].substr(0, 1) + "same-seven-bytes/", keys[i].substr(0, 1) + "same-seven-bytez"}) {
      if (std::binary_search(keys.begin(), keys.end(), absent)) continue;
      const SearchResult a = n.search(absent);
      EXPECT_FALSE(a.found) << absent;
      EXPECT_EQ(a.index, static_cast<std::size_t>(
                             std::lower_bound(keys.begin(), keys.end(), absent) - keys.begin()))
          << absent;
    }
  }
}

// A page whose tree at its threshold is small (a store's leaf: a few hundred keys of 100-byte
// items) is rebuilt with ranges of half the threshold, and half again down to 8 keys, while the
// finer tree stays within 0.4% of the page; a page whose tree is already near that share keeps
// the threshold's ranges. Every key is found either way.
TEST(NodeTest, B2PagesWithASmallTreeGetFinerRangesWithinAShareOfThePage) {
  std::mt19937 rng(19);
  const auto url_keys = [&](std::size_t n) {
    const char* paths[] = {"usr/share/doc/", "usr/lib/python3/dist-packages/", "wiki/", ""};
    std::vector<std::string> keys;
    while (keys.size() < n) {
      std::string key = "https://host" + std::to_string(rng() % 4) + ".example.org/";
      key += paths[rng() % 4];
      for (int i = 0, len = 4 + static_cast<int>(rng() % 12); i < len; ++i) {
        key += static_cast<char>('a' + rng() % 26);
      }
      keys.push_back(key);
    }
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    return keys;
  };
  const auto ranges_at = [](const std::vector<std::string>& keys, unsigned threshold) {
    std::vector<std::byte> out(4096);
    return b2tree::build([&](std::size_t i) { return std::string_view(keys[i]); }, keys.size(),
                         threshold, out, b2tree::Unconfirmed::kPrefixes)
        .range_end.size();
  };
  struct Case {
    std::size_t keys;
    std::size_t payload;
    bool finer;
  };
  for (const Case c : {Case{150, 150, true}, Case{900, 8, false}}) {
    const std::vector<std::string> keys = url_keys(c.keys);
    TestPage page(65536);
    page.writer().init(NodeKind::kLeaf, 0, 32);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      ASSERT_TRUE(page.writer().insert(i, keys[i], bytes_of(std::string(c.payload, 'v'))));
    }
    page.writer().rebuild_tree();
    ASSERT_TRUE(page.replay_matches());
    const Node n = page.node();
    const b2tree::TreeShape shape = b2tree::shape(n.tree());
    const std::size_t coarse = ranges_at(keys, 32);
    SCOPED_TRACE(::testing::Message() << keys.size() << " keys, " << shape.bytes << " tree bytes, "
                                      << shape.ranges << " ranges, " << coarse << " at 32");
    if (c.finer) {
      EXPECT_GE(shape.ranges, 2 * coarse);
      EXPECT_LE(shape.bytes, 65536u / 256);
    } else {
      EXPECT_EQ(shape.ranges, coarse);
    }
    EXPECT_EQ(n.tree_threshold(), 32u);  // the page's threshold stays what it was
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const SearchResult r = n.search(keys[i]);
      ASSERT_TRUE(r.found && r.index == i) << keys[i];
      ASSERT_EQ(n.slot(i).head, key_head_wide(keys[i], n.slot_skip(i))) << "slot " << i;
    }
  }
}

// A leaf's ranges take their heads after their unconfirmed prefix (the bytes their keys share
// past the tree's skip, engine/b2tree/embedded_tree.h), which the tree does not compare with the
// looked-up key: keys that differ from a range's keys there, or end inside it, are not found and
// get their lower bound; inserting one rebuilds the tree; so does an insert into a range that
// erases emptied; every key stays found and every head is taken where its range says.
TEST(NodeTest, B2LeafRangesCheckTheirUnconfirmedPrefixAfterTheSearch) {
  TestPage page(65536);
  page.writer().init(NodeKind::kLeaf, 0, 32);
  std::vector<std::string> keys;
  for (char host = 'a'; host <= 'z'; ++host) {
    for (int i = 10; i < 30; ++i)
      keys.push_back(std::string(1, host) + "/usr/share/doc/pkg" + std::to_string(i) +
                     "/copyright");
  }
  std::sort(keys.begin(), keys.end());
  for (std::size_t i = 0; i < keys.size(); ++i)
    ASSERT_TRUE(page.writer().insert(i, keys[i], bytes_of("v")));
  page.writer().rebuild_tree();
  ASSERT_TRUE(page.replay_matches());
  const b2tree::TreeShape built = b2tree::shape(page.node().tree());
  ASSERT_EQ(built.unconfirmed, built.ranges);
  ASSERT_GT(page.node().slot_skip(0), 10u);

  const auto expect_all_found = [&](const std::string& when) {
    const Node n = page.node();
    ASSERT_EQ(n.count(), keys.size()) << when;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(n.key(i), keys[i]) << when;
      ASSERT_EQ(n.slot(i).head, key_head_wide(keys[i], n.slot_skip(i))) << when << " slot " << i;
      const SearchResult r = n.search(keys[i]);
      ASSERT_TRUE(r.found && r.index == i) << when << " " << keys[i];
    }
  };
  const auto absent_near = [](const std::string& k) {
    return std::vector<std::string>{
        k.substr(0, 5),                           // ends inside the unconfirmed prefix
        k.substr(0, 1) + "/usr/share/doc/pkf99",  // below the range there
        k.substr(0, 1) + "/usr/share/doc/pkh",    // above it
        k.substr(0, 1) + "/usr/share/dob/pkg15/copyright",
        k.substr(0, 1) + "/usr/share/doc/pkg15/copyrighu",  // differs only past the heads
        k + "!"};
  };
  const auto expect_lower_bounds = [&](const std::string& when) {
    const Node n = page.node();
    for (const std::string& k : keys) {
      for (const std::string& absent : absent_near(k)) {
        if (std::binary_search(keys.begin(), keys.end(), absent)) continue;
        const SearchResult r = n.search(absent);
        EXPECT_FALSE(r.found) << when << " " << absent;
        EXPECT_EQ(r.index, static_cast<std::size_t>(
                               std::lower_bound(keys.begin(), keys.end(), absent) - keys.begin()))
            << when << " " << absent;
      }
    }
  };
  expect_all_found("built");
  expect_lower_bounds("built");

  // Keys that differ inside a range's unconfirmed prefix go in (the tree is rebuilt for them).
  const std::uint64_t rebuilds = tree_rebuilds().count;
  for (const std::string& k : {std::string("c/usr/share/doc/pkf99"), std::string("m/usr/"),
                               std::string("q/usr/share/doc/pkh")}) {
    NodeWriter w = page.writer();
    const SearchResult r = w.search(k);
    ASSERT_FALSE(r.found) << k;
    ASSERT_TRUE(w.insert(r.index, k, bytes_of("w")));
    keys.insert(std::lower_bound(keys.begin(), keys.end(), k), k);
    ASSERT_TRUE(page.replay_matches());
    expect_all_found("after inserting " + k);
  }
  EXPECT_GE(tree_rebuilds().count, rebuilds + 3);
  expect_lower_bounds("after the inserts");

  // Empty one range through erases, then insert into it: its prefix cannot be checked.
  const std::string host = "k";
  for (;;) {
    const auto it = std::find_if(keys.begin(), keys.end(),
                                 [&](const std::string& k) { return k.compare(0, 1, host) == 0; });
    if (it == keys.end()) break;
    NodeWriter w = page.writer();
    const SearchResult r = w.search(*it);
    ASSERT_TRUE(r.found) << *it;
    w.erase(r.index);
    keys.erase(it);
  }
  expect_all_found("after emptying a range");
  const std::string again = host + "/usr/share/doc/pkg77/copyright";
  NodeWriter w = page.writer();
  const SearchResult r = w.search(again);
  ASSERT_FALSE(r.found);
  ASSERT_TRUE(w.insert(r.index, again, bytes_of("x")));
  keys.insert(std::lower_bound(keys.begin(), keys.end(), again), again);
  ASSERT_TRUE(page.replay_matches());
  expect_all_found("after refilling the range");
  expect_lower_bounds("after refilling the range");
}

void expect_same_slot(const Slot& got, const Slot& want) {
  EXPECT_EQ(got.offset, want.offset);
  EXPECT_EQ(got.key_size, want.key_size);
  EXPECT_EQ(got.payload_size, want.payload_size);
  EXPECT_EQ(got.flags, want.flags);
  EXPECT_EQ(got.head, want.head);
}

// Wide slots (b2tree pages) pack the payload length with the overflow flag and the key length
// under a 7-byte head: every field comes back at its extremes; narrow slots keep their fields.
TEST(NodeTest, WideAndNarrowSlotsRoundTripEveryField) {
  const Slot extremes[] = {
      {0, 1, 0, 0, 0},
      {65535, kMaxKeySize, static_cast<std::uint16_t>(max_inline_payload(65536)), kOverflowRecord,
       (std::uint64_t{1} << 56) - 1},
      {4096, 250, 8, 0, 0x00FF00FF00FF00ull},
      {40, 17, 0x7FFF, kOverflowRecord, 1}};
  for (const Slot& s : extremes) {
    std::byte bytes[kSlotSize];
    encode_slot(s, /*wide=*/true, bytes);
    expect_same_slot(decode_slot(bytes, /*wide=*/true), s);
    Slot narrow = s;
    narrow.head &= 0xFFFFFFFF;
    encode_slot(narrow, /*wide=*/false, bytes);
    expect_same_slot(decode_slot(bytes, /*wide=*/false), narrow);
  }
}

// A wide head is the 7 key bytes from the skip, big-endian and zero-padded, for keys that end
// before, inside and after them (the fast path loads 8 bytes only where the key has them).
TEST(NodeTest, WideHeadsAreTheSevenKeyBytesAfterTheSkip) {
  const std::string key = "https://www.example.org/usr/share/doc/\x01\xff";
  for (std::size_t len = 0; len <= key.size(); ++len) {
    const std::string_view k(key.data(), len);
    for (std::size_t skip = 0; skip <= len; ++skip) {
      std::uint64_t expected = 0;
      for (std::size_t i = skip; i < skip + 7; ++i) {
        expected = expected << 8 | (i < len ? static_cast<unsigned char>(key[i]) : 0u);
      }
      ASSERT_EQ(key_head_wide(k, skip), expected) << "len " << len << " skip " << skip;
    }
  }
  EXPECT_LT(key_head_wide("ab", 0), key_head_wide("ab\x01", 0));
  EXPECT_LT(key_head_wide("abcdefg", 0), key_head_wide("abcdefh", 0));
  EXPECT_EQ(key_head_wide("abcdefgX", 0), key_head_wide("abcdefgY", 0));  // the 8th byte: a tie
}

// A page built as a bptree page and then given its embedded tree (what a split's build_node
// does) changes its slots from narrow to wide: keys, payloads, the overflow flag and child
// references survive, heads are taken after each range's skip, and it is all logged.
TEST(NodeTest, EnablingTheTreeWidensTheSlotsOfAFilledPage) {
  for (const bool inner : {false, true}) {
    TestPage page(16384);
    page.writer().init(inner ? NodeKind::kInner : NodeKind::kLeaf, inner ? 1 : 0);
    std::vector<std::string> keys;
    for (int i = 0; i < 150; ++i) {
      keys.push_back("https://deb.debian.org/debian/pool/main/p/package-" +
                     std::to_string(1000 + i) + "/changelog");
    }
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const std::uint64_t payload = 0x1000 + i;
      ASSERT_TRUE(page.writer().insert(i, keys[i],
                                       {reinterpret_cast<const std::byte*>(&payload), 8},
                                       !inner && i % 7 == 0 ? kOverflowRecord : 0));
    }
    ASSERT_TRUE(page.replay_matches());
    ASSERT_FALSE(page.node().wide_slots());
    page.writer().enable_tree(8);
    ASSERT_TRUE(page.replay_matches());
    const Node n = page.node();
    ASSERT_TRUE(n.wide_slots());
    ASSERT_FALSE(n.tree().empty());
    ASSERT_EQ(n.count(), keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(n.key(i), keys[i]);
      std::uint64_t payload;
      ASSERT_EQ(n.payload(i).size(), 8u);
      std::memcpy(&payload, n.payload(i).data(), 8);
      EXPECT_EQ(payload, 0x1000 + i);
      EXPECT_EQ(n.flags(i), !inner && i % 7 == 0 ? kOverflowRecord : 0);
      EXPECT_EQ(n.slot(i).head, key_head_wide(keys[i], n.slot_skip(i)));
      const SearchResult r = n.search(keys[i]);
      ASSERT_TRUE(r.found && r.index == i) << keys[i];
    }
    // The keys share 44 bytes, so heads after a skip of 0 would all tie: the tree skipped.
    EXPECT_GT(n.slot_skip(keys.size() / 2), 40u);
    if (inner) {
      std::size_t visited = 0;
      for_each_child_slot(page.data(), [&](std::uint64_t& child) {
        EXPECT_TRUE(child == 0 || (child >= 0x1000 && child < 0x1000 + keys.size()));
        ++visited;
      });
      EXPECT_EQ(visited, keys.size() + 1);
    }
  }
}

// On a b2tree page the overflow flag shares its u16 with the payload length: setting and
// clearing it in place, replacing payloads of other sizes and compacting keep both.
TEST(NodeTest, B2PagesKeepFlagsAndPayloadLengthsApart) {
  TestPage page(65536);
  page.writer().init(NodeKind::kLeaf, 0, 32);
  const std::string big(max_inline_payload(65536) / 2, 'b');
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(page.writer().insert(static_cast<std::size_t>(i), "key:" + std::to_string(i),
                                     bytes_of(i == 2 ? big : std::string(20, 'x'))));
  }
  ASSERT_TRUE(page.replay_matches());
  ASSERT_TRUE(page.writer().replace_payload(1, bytes_of(std::string(20, 'y')), kOverflowRecord));
  ASSERT_TRUE(page.replay_matches());
  EXPECT_EQ(page.node().flags(1), kOverflowRecord);
  EXPECT_EQ(string_of(page.node().payload(1)), std::string(20, 'y'));
  ASSERT_TRUE(page.writer().replace_payload(1, bytes_of(std::string(20, 'z')), 0));
  EXPECT_EQ(page.node().flags(1), 0);
  ASSERT_TRUE(page.writer().replace_payload(3, bytes_of(std::string(300, 'w')), kOverflowRecord));
  ASSERT_TRUE(page.replay_matches());
  page.writer().compact();
  ASSERT_TRUE(page.replay_matches());
  const Node n = page.node();
  EXPECT_EQ(string_of(n.payload(1)), std::string(20, 'z'));
  EXPECT_EQ(string_of(n.payload(2)), big);
  EXPECT_EQ(n.flags(2), 0);
  EXPECT_EQ(string_of(n.payload(3)), std::string(300, 'w'));
  EXPECT_EQ(n.flags(3), kOverflowRecord);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(n.key(i), "key:" + std::to_string(i));
    EXPECT_EQ(n.slot(i).head, key_head_wide(n.key(i), n.slot_skip(i)));
    EXPECT_TRUE(n.search(n.key(i)).found);
  }
}

}  // namespace
}  // namespace pmcached::engine::bptree

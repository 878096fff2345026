// Two threads upserting, erasing, reading and scanning at once, on disjoint and on overlapping
// keys, over a small pool (run under TSan too).
#include <atomic>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine/bptree/btree.h"
#include "tests/bptree/btree_harness.h"

namespace pmcached::engine::bptree {
namespace {

using buffer::PageTableKind;
using testing::HarnessOptions;
using testing::TreeHarness;

// "key#version#" repeated: a torn or misplaced record shows.
std::string make_value(const std::string& key, unsigned version, std::size_t size) {
  std::string seed = key;
  seed += '#';
  seed += std::to_string(version);
  seed += '#';
  std::string value;
  while (value.size() < size) value += seed;
  value.resize(size);
  return value;
}

bool plausible(const std::string& key, const std::string& value) {
  std::string head = key;
  head += '#';
  if (value.size() < head.size()) return value == head.substr(0, value.size());
  if (value.compare(0, head.size(), head) != 0) return false;
  const std::size_t end = value.find('#', head.size());
  if (end == std::string::npos) return true;
  const std::string seed = value.substr(0, end + 1);
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (value[i] != seed[i % seed.size()]) return false;
  }
  return true;
}

class BTreeConcurrencyTest : public ::testing::TestWithParam<testing::TreeKind> {
 protected:
  HarnessOptions options() const {
    HarnessOptions o;
    o.page_table = GetParam().page_table;
    o.b2_threshold = GetParam().b2_threshold;
    o.frames = 48;
    return o;
  }
};

TEST_P(BTreeConcurrencyTest, DisjointKeysEndExactlyAsEachThreadLeftThem) {
  TreeHarness h(options());
  std::map<std::string, std::string> models[2];
  std::atomic<int> failures{0};
  auto worker = [&](int t) {
    std::mt19937 rng(static_cast<unsigned>(t + 10));
    auto& model = models[t];
    for (int op = 0; op < 3000; ++op) {
      std::string key(1, 't');
      key += std::to_string(t);
      key += '-';
      key += std::to_string(rng() % 800);
      const unsigned what = rng() % 10;
      if (what < 6) {
        const std::size_t size = rng() % 40 == 0 ? 2500 + rng() % 3000 : rng() % 300;
        const std::string value = make_value(key, static_cast<unsigned>(op), size);
        const WriteStatus status = h.put(key, value);
        if (status != (model.count(key) ? WriteStatus::kReplaced : WriteStatus::kInserted)) {
          ++failures;
        }
        model[key] = value;
      } else if (what < 9) {
        if (h.erase(key) != (model.erase(key) == 1)) ++failures;
      } else {
        auto it = model.find(key);
        if (h.get(key) != (it == model.end() ? std::nullopt : std::optional(it->second))) {
          ++failures;
        }
      }
    }
  };
  std::thread a(worker, 0);
  std::thread b(worker, 1);
  a.join();
  b.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(h.tree().check(), "");
  std::map<std::string, std::string> all = models[0];
  all.insert(models[1].begin(), models[1].end());
  EXPECT_EQ(h.tree().size(), all.size());
  std::map<std::string, std::string> seen;
  h.tree().scan("", SIZE_MAX, [&](std::string_view key, std::span<const std::byte> head) {
    seen.emplace(key, std::string(reinterpret_cast<const char*>(head.data()), head.size()));
    return true;
  });
  EXPECT_EQ(seen, all);
}

TEST_P(BTreeConcurrencyTest, OverlappingKeysNeverShowATornRecord) {
  TreeHarness h(options());
  std::atomic<int> failures{0};
  std::atomic<bool> stop{false};
  auto writer = [&](int t) {
    std::mt19937 rng(static_cast<unsigned>(t + 20));
    for (int op = 0; op < 3000; ++op) {
      std::string key("key");
      key += std::to_string(rng() % 300);
      const unsigned what = rng() % 10;
      if (what < 5) {
        const std::size_t size = rng() % 30 == 0 ? 2500 + rng() % 3000 : rng() % 400;
        (void)h.put(key, make_value(key, static_cast<unsigned>(op * 2 + t), size));
      } else if (what < 8) {
        (void)h.erase(key);
      } else {
        const auto value = h.get(key);
        if (value && !plausible(key, *value)) ++failures;
      }
    }
  };
  // Scans run meanwhile: keys strictly increasing, heads belonging to their keys.
  auto scanner = [&] {
    while (!stop.load()) {
      std::string last;
      bool first = true;
      h.tree().scan("", 24, [&](std::string_view key, std::span<const std::byte> head) {
        const std::string k(key);
        if (!first && k <= last) ++failures;
        if (!plausible(k, std::string(reinterpret_cast<const char*>(head.data()), head.size()))) {
          ++failures;
        }
        first = false;
        last = k;
        return true;
      });
    }
  };
  std::thread a(writer, 0);
  std::thread b(writer, 1);
  std::thread s(scanner);
  a.join();
  b.join();
  stop = true;
  s.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(h.tree().check(), "");
  std::size_t count = 0;
  h.tree().scan("", 0, [&](std::string_view, std::span<const std::byte>) {
    ++count;
    return true;
  });
  EXPECT_EQ(count, h.tree().size());
}

// A reader thread reads keys that are never erased while two writers rewrite them with records
// of other sizes (page reorganisations, splits, overflow chains, evictions through a small
// pool): every read finds its key and a whole record of it. In the Release and ASan passes the
// reads go optimistically first (BTree::read), so they race the writers' changes to the very
// pages they search; under TSan they take latches.
TEST_P(BTreeConcurrencyTest, ReadsRacingWritersFindEveryKeyWithAWholeRecord) {
  TreeHarness h(options());
  constexpr int kKeys = 60;  // a few leaves: the reader is nearly always on a page being written
  auto key_of = [](unsigned n) { return "stable/" + std::to_string(n); };
  for (unsigned n = 0; n < kKeys; ++n)
    ASSERT_EQ(h.put(key_of(n), make_value(key_of(n), 0, 50)), WriteStatus::kInserted);
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  auto writer = [&](int t) {
    std::mt19937 rng(static_cast<unsigned>(t + 30));
    for (int op = 0; op < 20000; ++op) {
      const std::string key = key_of(rng() % kKeys);
      const std::size_t size = rng() % 40 == 0 ? 2500 + rng() % 3000 : 1 + rng() % 500;
      if (h.put(key, make_value(key, static_cast<unsigned>(op * 2 + t), size)) !=
          WriteStatus::kReplaced) {
        ++failures;
      }
    }
  };
  std::uint64_t reads = 0;
  std::thread a(writer, 0);
  std::thread b(writer, 1);
  std::thread reader([&] {
    std::mt19937 rng(99);
    while (!stop.load(std::memory_order_relaxed)) {
      const std::string key = key_of(rng() % kKeys);
      const std::optional<std::string> value = h.get(key);
      if (!value || !plausible(key, *value)) ++failures;
      ++reads;
    }
  });
  a.join();
  b.join();
  stop = true;
  reader.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(reads, 0u);
  EXPECT_EQ(h.tree().check(), "");
  RecordProperty("reads", std::to_string(reads));
  RecordProperty("latched_reads", std::to_string(h.tree().stats().latched_reads));
}

INSTANTIATE_TEST_SUITE_P(Trees, BTreeConcurrencyTest, testing::kTreeKinds, testing::tree_kind_name);

}  // namespace
}  // namespace pmcached::engine::bptree

// Key heads (engine/btree/key_heads.h): heads order like keys, and the head-guided upper bound
// finds what std::upper_bound finds over the full keys — for keys with and without the prefix,
// shorter than it, with zero bytes, longer than kMaxPrefix — while reading a key only on a tie.
#include "engine/btree/key_heads.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace pmcached::engine::btree {
namespace {

// A random key over a small alphabet (with '\0') so that prefixes, ties and padding all occur.
std::string random_key(std::mt19937_64& rng, const std::string& stem, std::size_t max_tail) {
  static constexpr char kAlphabet[] = {'\0', '\x01', 'a', 'b', '\xff'};
  std::string key = stem;
  const std::size_t tail = rng() % (max_tail + 1);
  for (std::size_t i = 0; i < tail; ++i) key += kAlphabet[rng() % sizeof kAlphabet];
  return key;
}

KeyPrefix prefix_of(const std::vector<std::string>& separators) {
  KeyPrefix prefix{};
  if (separators.empty()) return prefix;
  prefix.assign(separators.front());
  for (const std::string& s : separators) prefix.shrink_to(s);
  return prefix;
}

TEST(KeyHeads, HeadsOrderLikeTheKeysThatShareThePrefix) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20000; ++round) {
    const std::string stem = random_key(rng, "", 3);
    const std::string a = random_key(rng, stem, 6);
    const std::string b = random_key(rng, stem, 6);
    const std::uint32_t ha = head_after(a, stem.size());
    const std::uint32_t hb = head_after(b, stem.size());
    if (ha < hb) {
      EXPECT_LT(a, b) << round;
    }
    if (a < b) {
      EXPECT_LE(ha, hb) << round;
    }
  }
}

TEST(KeyHeads, UpperBoundMatchesTheFullKeysAndReadsKeysOnlyOnTies) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 3000; ++round) {
    // Separators that share a stem (sometimes longer than kMaxPrefix), sorted and distinct.
    const std::size_t stem_len = round % 3 == 0 ? kMaxPrefix + 5 : rng() % 6;
    const std::string stem = random_key(rng, std::string(stem_len, 'm'), 0);
    std::vector<std::string> seps;
    const std::size_t n = 1 + rng() % 54;
    for (std::size_t i = 0; i < n; ++i) seps.push_back(random_key(rng, stem, 5));
    std::sort(seps.begin(), seps.end());
    seps.erase(std::unique(seps.begin(), seps.end()), seps.end());

    // Any prefix of the separators' common prefix is a valid one: test the longest and a shorter.
    KeyPrefix prefix = prefix_of(seps);
    if (round % 2 == 1) prefix.len = static_cast<std::uint8_t>(prefix.len / 2);
    std::vector<std::uint32_t> heads;
    for (const std::string& s : seps) heads.push_back(head_after(s, prefix.len));

    for (int probe = 0; probe < 20; ++probe) {
      std::string key;
      switch (probe % 4) {
        case 0: key = seps[rng() % seps.size()]; break;  // a separator itself
        case 1: key = random_key(rng, stem, 5); break;   // shares the stem
        case 2: key = random_key(rng, stem.substr(0, rng() % (stem.size() + 1)), 3); break;
        default: key = random_key(rng, "", 8); break;  // anything
      }
      unsigned reads = 0;
      const unsigned got = upper_bound(
          prefix, key, 0, static_cast<unsigned>(seps.size()), [&](unsigned p) { return heads[p]; },
          [&](unsigned p) {
            ++reads;
            return std::string_view(seps[p]);
          });
      const auto want = std::upper_bound(seps.begin(), seps.end(), key) - seps.begin();
      ASSERT_EQ(got, want) << "round " << round << " probe " << probe;
      // Keys are read only where a head equals the key's own head.
      if (key.compare(0, prefix.len, prefix.view()) == 0) {
        const std::uint32_t head = head_after(key, prefix.len);
        const auto ties = std::count(heads.begin(), heads.end(), head);
        ASSERT_LE(reads, static_cast<unsigned>(ties)) << "round " << round;
      } else {
        ASSERT_EQ(reads, 0u) << "round " << round;
      }
    }
  }
}

TEST(KeyHeads, McBenchmarkKeysAreToldApartByTheirHeads) {
  // A bottom inner node's worth of separators (one range of 10,000 numbers: a 500k-key tree has
  // ~360 such nodes): no probe reads a key unless it hits a separator exactly, and probes outside
  // the node's prefix read none.
  std::mt19937_64 rng(3);
  std::vector<std::string> seps;
  char buf[32];
  for (int i = 0; i < 54; ++i) {
    std::snprintf(buf, sizeof buf, "mykey_rand%012d", 120000 + static_cast<int>(rng() % 10000));
    seps.emplace_back(buf);
  }
  std::sort(seps.begin(), seps.end());
  seps.erase(std::unique(seps.begin(), seps.end()), seps.end());
  const KeyPrefix prefix = prefix_of(seps);
  EXPECT_GE(prefix.len, 18);
  std::vector<std::uint32_t> heads;
  for (const std::string& s : seps) heads.push_back(head_after(s, prefix.len));
  for (int k = 119000; k < 131000; ++k) {
    std::snprintf(buf, sizeof buf, "mykey_rand%012d", k);
    const std::string key = buf;
    unsigned reads = 0;
    const unsigned got = upper_bound(
        prefix, key, 0, static_cast<unsigned>(seps.size()), [&](unsigned p) { return heads[p]; },
        [&](unsigned p) {
          ++reads;
          return std::string_view(seps[p]);
        });
    ASSERT_EQ(got, std::upper_bound(seps.begin(), seps.end(), key) - seps.begin());
    ASSERT_EQ(reads, std::binary_search(seps.begin(), seps.end(), key) ? 1u : 0u) << key;
  }
}

TEST(KeyHeads, PrefixIsCappedAndShrinks) {
  KeyPrefix prefix{};
  prefix.assign(std::string(200, 'k'));
  EXPECT_EQ(prefix.len, kMaxPrefix);
  EXPECT_FALSE(prefix.shrink_to(std::string(100, 'k')));
  EXPECT_TRUE(prefix.shrink_to("kkkz"));
  EXPECT_EQ(prefix.view(), "kkk");
  EXPECT_TRUE(prefix.shrink_to("k"));
  EXPECT_EQ(prefix.view(), "k");
  EXPECT_TRUE(prefix.shrink_to(""));
  EXPECT_EQ(prefix.len, 0);
}

}  // namespace
}  // namespace pmcached::engine::btree

// What the embedded-tree tests share: deterministic key sets (URL-like, words, random bytes,
// prefixes of each other), a tree built into an exactly-sized heap buffer (so ASan sees any read
// past it), and the lookup invariant of embedded_tree.h as a checked function.
#pragma once

#include <algorithm>
#include <cstddef>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "engine/b2tree/embedded_tree.h"

namespace pmcached::engine::b2tree::testing {

using Keys = std::vector<std::string>;

inline Keys sorted_unique(Keys keys) {
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

// Pronounceable words from syllables: natural-looking text without a word list.
inline std::string word(std::mt19937& rng) {
  static const char* const kSyllables[] = {"ka", "lo",  "mi", "ne", "tor", "ux", "bel", "sa",
                                           "ri", "que", "da", "on", "ve",  "st", "pa",  "ing"};
  std::string w;
  const int n = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < n; ++i) w += kSyllables[rng() % 16];
  return w;
}

// URL-like keys: scheme, one of a few dozen hosts, 1..4 path segments, sometimes a query.
inline Keys url_keys(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::string> hosts;
  for (int i = 0; i < 40; ++i) {
    static const char* const kTld[] = {".com", ".org", ".net", ".de"};
    std::string host = rng() % 2 ? "https://www." : "http://";
    host += word(rng);
    host += kTld[rng() % 4];
    hosts.push_back(host);
  }
  Keys keys;
  while (keys.size() < n) {
    std::string k = hosts[rng() % hosts.size()];
    const int segments = 1 + static_cast<int>(rng() % 4);
    // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string&&.
    for (int i = 0; i < segments; ++i) {
      k += '/';
      k += word(rng);
    }
    if (rng() % 3 == 0) {
      k += "?id=";
      k += std::to_string(rng() % 100000);
    }
    if (k.size() <= 250) keys.push_back(k);
    if (keys.size() == n) keys = sorted_unique(std::move(keys));
  }
  return keys;
}

// Title-like keys: 1..4 words with capitals and spaces.
inline Keys word_keys(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  Keys keys;
  while (keys.size() < n) {
    std::string k;
    const int words = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < words; ++i) {
      std::string w = word(rng);
      if (i == 0 || rng() % 3 == 0) w[0] = static_cast<char>(w[0] - 'a' + 'A');
      if (i) k += '_';
      k += w;
    }
    keys.push_back(k);
    if (keys.size() == n) keys = sorted_unique(std::move(keys));
  }
  return keys;
}

// Random bytes, 0x00 and 0xFF included (and favoured), lengths 1..max_len.
inline Keys random_keys(std::size_t n, unsigned seed, std::size_t max_len = 20) {
  std::mt19937 rng(seed);
  Keys keys;
  while (keys.size() < n) {
    std::string k(1 + rng() % max_len, '\0');
    for (char& c : k) {
      const unsigned r = rng() % 8;
      c = static_cast<char>(r == 0 ? 0x00 : r == 1 ? 0xFF : rng() % 256);
    }
    keys.push_back(k);
    if (keys.size() == n) keys = sorted_unique(std::move(keys));
  }
  return keys;
}

// Keys that are prefixes of each other, with \0 and \xFF extensions (the ended-key rule).
inline Keys prefix_keys() {
  Keys keys;
  const std::string bases[] = {"a", "ab", std::string("a\0", 2), "abc", "b", std::string(1, '\0')};
  for (const std::string& b : bases) {
    std::string k = b;
    for (int i = 0; i < 12; ++i) {
      keys.push_back(k);
      keys.push_back(k + '\xFF');
      keys.push_back(k + std::string(1, '\0') + "x");
      k += static_cast<char>(i % 3 == 0 ? '\0' : 'a' + i);
    }
  }
  return sorted_unique(std::move(keys));
}

// A tree built over `keys` and kept in a buffer of exactly its size.
struct Built {
  BuildResult result;
  std::vector<std::byte> region;
};

inline Built build_exact(const Keys& keys, unsigned threshold, std::size_t budget = 32767,
                         Unconfirmed unconfirmed = Unconfirmed::kNone) {
  std::vector<std::byte> scratch(budget);
  Built b;
  b.result = build([&](std::size_t i) -> std::string_view { return keys[i]; }, keys.size(),
                   threshold, scratch, unconfirmed);
  b.region.assign(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(b.result.bytes));
  return b;
}

// `key` printable, for failure messages.
inline std::string testing_key_note(std::string_view key) {
  std::string s = "key \"";
  for (const char c : key) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7F) {
      s += c;
    } else {
      static const char kHex[] = "0123456789abcdef";
      s += "\\x";
      s += kHex[u >> 4];
      s += kHex[u & 15];
    }
  }
  return s + "\"";
}

// The lookup invariant of embedded_tree.h for `key` against the page's sorted `keys`; returns the
// hit so callers can assert more.
inline RangeHit check_lookup(std::span<const std::byte> region, const Keys& keys,
                             std::string_view key) {
  const RangeHit h = lookup(region, key, keys.size());
  EXPECT_LE(h.begin, h.end);
  EXPECT_LE(h.end, keys.size());
  const auto lower = static_cast<std::size_t>(
      std::lower_bound(keys.begin(), keys.end(), key,
                       [](const std::string& a, std::string_view b) { return a < b; }) -
      keys.begin());
  EXPECT_LE(h.begin, lower) << testing_key_note(key);
  EXPECT_LE(lower, h.end) << testing_key_note(key);
  if (h.skip != kNoSkip) {
    EXPECT_LE(h.skip, key.size());
    for (std::size_t i = h.begin; i < h.end; ++i)
      EXPECT_EQ(std::string_view(keys[i]).substr(0, h.skip), key.substr(0, h.skip))
          << "slot " << i << " " << testing_key_note(key);
  }
  return h;
}

}  // namespace pmcached::engine::b2tree::testing

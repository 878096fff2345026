// Seed 002's key distributions. See bench_workload.h.
#include "bench/bench_workload.h"

#include <algorithm>
#include <cctype>
#include <random>

namespace pmcached::bench {

std::string_view distribution_name(Distribution d) noexcept {
  switch (d) {
    case Distribution::kDense: return "Dense";
    case Distribution::kSparse: return "Sparse";
    case Distribution::kClustered: return "Clustered";
  }
  return "?";
}

bool parse_distribution(std::string_view text, Distribution& out) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (Distribution d : {Distribution::kDense, Distribution::kSparse, Distribution::kClustered}) {
    std::string name(distribution_name(d));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (name == lower) {
      out = d;
      return true;
    }
  }
  return false;
}

std::vector<std::uint64_t> make_keys(Distribution d, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> keys;
  keys.reserve(n + 64);
  switch (d) {
    case Distribution::kDense:
      for (std::size_t i = 1; i <= n; ++i) keys.push_back(i);
      break;
    case Distribution::kSparse:
      while (keys.size() < n) keys.push_back(rng());
      break;
    case Distribution::kClustered:
      while (keys.size() < n) {
        const std::uint64_t base = rng() & ~63ull;
        for (std::uint64_t j = 0; j < 64 && keys.size() < n; ++j) keys.push_back(base + j);
      }
      break;
  }
  // Duplicates (two equal random draws) are dropped, then the order is shuffled.
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::shuffle(keys.begin(), keys.end(), rng);
  return keys;
}

std::string be64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 7; i >= 0; --i, v >>= 8) s[static_cast<std::size_t>(i)] = static_cast<char>(v);
  return s;
}

}  // namespace pmcached::bench

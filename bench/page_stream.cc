#include "bench/page_stream.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace pmcached::bench {

std::string_view page_skew_name(PageSkew skew) noexcept {
  return skew == PageSkew::kUniform ? "uniform" : "zipf";
}

std::vector<std::uint32_t> make_page_stream(PageSkew skew, std::uint32_t pages, std::size_t count,
                                            double theta, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint32_t> out(count);
  if (skew == PageSkew::kUniform) {
    std::uniform_int_distribution<std::uint32_t> page(1, pages);
    for (auto& p : out) p = page(rng);
    return out;
  }
  // Rank r (0 = hottest) has probability proportional to 1 / (r + 1)^theta.
  double zeta_n = 0;
  for (std::uint32_t i = 1; i <= pages; ++i) zeta_n += 1.0 / std::pow(i, theta);
  const double zeta_2 = 1.0 + 1.0 / std::pow(2.0, theta);
  const double alpha = 1.0 / (1.0 - theta);
  const double eta = (1.0 - std::pow(2.0 / pages, 1.0 - theta)) / (1.0 - zeta_2 / zeta_n);
  std::vector<std::uint32_t> page_of_rank(pages);
  std::iota(page_of_rank.begin(), page_of_rank.end(), 1u);
  std::shuffle(page_of_rank.begin(), page_of_rank.end(), std::mt19937_64(0x5eed));
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (auto& p : out) {
    const double u = unit(rng);
    const double uz = u * zeta_n;
    std::uint32_t rank;
    if (uz < 1.0) {
      rank = 0;
    } else if (uz < zeta_2) {
      rank = 1;
    } else {
      rank = static_cast<std::uint32_t>(pages * std::pow(eta * u - eta + 1.0, alpha));
    }
    p = page_of_rank[std::min(rank, pages - 1)];
  }
  return out;
}

}  // namespace pmcached::bench

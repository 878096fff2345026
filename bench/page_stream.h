// Page-reference streams for the buffer benchmarks: `count` references to pages 1..pages,
// either uniform or Zipf-distributed (skew theta, 0.99 as in YCSB; Gray et al. 1994's
// generator). Zipf ranks are scattered over the page ids by a fixed random permutation, so the
// hot pages are not the low ids. Reproducible from `seed`.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace pmcached::bench {

enum class PageSkew { kUniform, kZipf };

[[nodiscard]] std::string_view page_skew_name(PageSkew skew) noexcept;

[[nodiscard]] std::vector<std::uint32_t> make_page_stream(PageSkew skew, std::uint32_t pages,
                                                          std::size_t count, double theta,
                                                          std::uint64_t seed);

}  // namespace pmcached::bench

// The workloads of seed 002 ch. 4 for the index benchmarks: N distinct 64-bit integers in one of
// three distributions, inserted in random order as 8-byte big-endian keys (integer order = key
// order): Dense 1..N, Sparse uniform 64-bit, Clustered runs of 64 sequential keys at random bases.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pmcached::bench {

enum class Distribution { kDense, kSparse, kClustered };

[[nodiscard]] std::string_view distribution_name(Distribution d) noexcept;
// "dense" / "sparse" / "clustered" (any case); false for anything else.
[[nodiscard]] bool parse_distribution(std::string_view text, Distribution& out);

// N distinct integers of `d` in a random insertion order, reproducible from `seed`.
[[nodiscard]] std::vector<std::uint64_t> make_keys(Distribution d, std::size_t n,
                                                   std::uint64_t seed);

// The 8-byte big-endian encoding of `v`.
[[nodiscard]] std::string be64(std::uint64_t v);

}  // namespace pmcached::bench

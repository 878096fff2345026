// LatencyHistogram: a log-linear histogram of durations in nanoseconds, written by one thread and
// readable by any (relaxed atomics), for the per-phase request latencies of `stats latency`.
//
// Buckets: values below 16 ns exactly; above, 8 buckets per power of two, so a percentile read
// from the histogram (the upper bound of its bucket) is at most 12.5% above the true value. The
// last bucket also holds everything from about 2^40 ns (18 minutes) up.
//
// Thread safety: record() and reset() from the owning thread only; snapshot() from any thread
// (a snapshot taken while the owner records may miss the latest few values, never tear one).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace pmcached::server {

class LatencyHistogram {
 public:
  static constexpr std::size_t kSubBuckets = 8;
  static constexpr std::size_t kExactBelow = 16;
  static constexpr std::size_t kBuckets = kExactBelow + (40 - 4) * kSubBuckets;

  // A plain copy of the counts, summable across threads.
  struct Snapshot {
    std::array<std::uint64_t, kBuckets> counts{};

    Snapshot& operator+=(const Snapshot& other) noexcept;
    [[nodiscard]] std::uint64_t count() const noexcept;
    // The upper bound (ns) of the bucket that holds quantile q (0 < q <= 1); 0 when empty.
    [[nodiscard]] std::uint64_t percentile(double q) const noexcept;
  };

  void record(std::uint64_t nanoseconds) noexcept {
    std::atomic<std::uint64_t>& bucket = counts_[bucket_of(nanoseconds)];
    bucket.store(bucket.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  [[nodiscard]] Snapshot snapshot() const noexcept;
  void reset() noexcept;

  [[nodiscard]] static std::size_t bucket_of(std::uint64_t nanoseconds) noexcept;
  // The largest value that falls into `bucket`.
  [[nodiscard]] static std::uint64_t upper_bound(std::size_t bucket) noexcept;

 private:
  std::array<std::atomic<std::uint64_t>, kBuckets> counts_{};
};

}  // namespace pmcached::server

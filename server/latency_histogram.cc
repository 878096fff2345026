#include "server/latency_histogram.h"

#include <bit>
#include <cmath>

namespace pmcached::server {

std::size_t LatencyHistogram::bucket_of(std::uint64_t ns) noexcept {
  if (ns < kExactBelow) return static_cast<std::size_t>(ns);
  const unsigned exponent = static_cast<unsigned>(std::bit_width(ns)) - 1;  // >= 4
  const std::size_t sub = static_cast<std::size_t>(ns >> (exponent - 3)) & (kSubBuckets - 1);
  const std::size_t index = kExactBelow + (exponent - 4) * kSubBuckets + sub;
  return index < kBuckets ? index : kBuckets - 1;
}

std::uint64_t LatencyHistogram::upper_bound(std::size_t bucket) noexcept {
  if (bucket < kExactBelow) return bucket;
  if (bucket >= kBuckets - 1) return UINT64_MAX;
  const std::size_t exponent = 4 + (bucket - kExactBelow) / kSubBuckets;
  const std::uint64_t sub = (bucket - kExactBelow) % kSubBuckets;
  // Bucket (exponent, sub) holds [2^e + sub * 2^(e-3), 2^e + (sub + 1) * 2^(e-3)).
  return (std::uint64_t{1} << exponent) + (sub + 1) * (std::uint64_t{1} << (exponent - 3)) - 1;
}

LatencyHistogram::Snapshot LatencyHistogram::snapshot() const noexcept {
  Snapshot s;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    s.counts[i] = counts_[i].load(std::memory_order_relaxed);
  }
  return s;
}

void LatencyHistogram::reset() noexcept {
  for (auto& count : counts_) count.store(0, std::memory_order_relaxed);
}

LatencyHistogram::Snapshot& LatencyHistogram::Snapshot::operator+=(const Snapshot& other) noexcept {
  for (std::size_t i = 0; i < kBuckets; ++i) counts[i] += other.counts[i];
  return *this;
}

std::uint64_t LatencyHistogram::Snapshot::count() const noexcept {
  std::uint64_t total = 0;
  for (const std::uint64_t c : counts) total += c;
  return total;
}

std::uint64_t LatencyHistogram::Snapshot::percentile(double q) const noexcept {
  const std::uint64_t total = count();
  if (total == 0) return 0;
  // The smallest value with at least q of all values at or below it.
  const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(total)));
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    seen += counts[i];
    if (seen >= rank && seen > 0) return upper_bound(i);
  }
  return upper_bound(kBuckets - 1);
}

}  // namespace pmcached::server

#include "server/latency_histogram.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace pmcached::server {
namespace {

TEST(LatencyHistogram, EveryValueFallsInABucketWhoseBoundsHoldIt) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100'000; ++i) {
    const std::uint64_t value = rng() >> (rng() % 64);
    const std::size_t bucket = LatencyHistogram::bucket_of(value);
    ASSERT_LT(bucket, LatencyHistogram::kBuckets);
    ASSERT_LE(value, LatencyHistogram::upper_bound(bucket)) << value;
    if (bucket > 0) {
      ASSERT_GT(value, LatencyHistogram::upper_bound(bucket - 1)) << value;
    }
  }
}

TEST(LatencyHistogram, BucketBoundsGrowAndAreAtMostAnEighthAboveTheirLowerEnd) {
  for (std::size_t b = 1; b + 1 < LatencyHistogram::kBuckets; ++b) {
    const std::uint64_t lower = LatencyHistogram::upper_bound(b - 1) + 1;
    const std::uint64_t upper = LatencyHistogram::upper_bound(b);
    ASSERT_GE(upper, lower);
    ASSERT_LE(static_cast<double>(upper), static_cast<double>(lower) * 1.125) << b;
    ASSERT_EQ(LatencyHistogram::bucket_of(lower), b);
    ASSERT_EQ(LatencyHistogram::bucket_of(upper), b);
  }
}

TEST(LatencyHistogram, PercentilesAreWithinAnEighthOfTheExactOnes) {
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> latency(10.0, 1.5);  // around 20 us, a long tail
  LatencyHistogram histogram;
  std::vector<std::uint64_t> values;
  for (int i = 0; i < 200'000; ++i) {
    values.push_back(static_cast<std::uint64_t>(latency(rng)));
    histogram.record(values.back());
  }
  std::sort(values.begin(), values.end());
  const LatencyHistogram::Snapshot snapshot = histogram.snapshot();
  ASSERT_EQ(snapshot.count(), values.size());
  for (const double q : {0.5, 0.9, 0.99, 0.999, 1.0}) {
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
    const std::uint64_t exact = values[rank - 1];
    const std::uint64_t reported = snapshot.percentile(q);
    EXPECT_GE(reported, exact) << q;
    EXPECT_LE(static_cast<double>(reported), static_cast<double>(exact) * 1.125 + 1) << q;
  }
}

TEST(LatencyHistogram, SnapshotsAddUpAndResetEmpties) {
  LatencyHistogram a, b;
  for (std::uint64_t v = 0; v < 1000; ++v) a.record(v);
  for (std::uint64_t v = 0; v < 500; ++v) b.record(1'000'000 + v);
  LatencyHistogram::Snapshot sum = a.snapshot();
  sum += b.snapshot();
  EXPECT_EQ(sum.count(), 1500u);
  EXPECT_GE(sum.percentile(1.0), 1'000'499u);
  EXPECT_LE(sum.percentile(0.5), 1'000u);
  a.reset();
  EXPECT_EQ(a.snapshot().count(), 0u);
  EXPECT_EQ(a.snapshot().percentile(0.99), 0u);
}

}  // namespace
}  // namespace pmcached::server

#include "server/maintenance_cadence.h"

#include <cstddef>

#include <gtest/gtest.h>

namespace pmcached::server {
namespace {

using Duration = MaintenanceCadence::Duration;

TEST(MaintenanceCadence, TicksEveryMillisecondWhileRequestsArrive) {
  MaintenanceCadence cadence;
  std::uint64_t bytes_read = 0;
  for (int i = 0; i < 100; ++i) {
    bytes_read += 40;
    EXPECT_EQ(cadence.on_tick(bytes_read, Duration{1'000}).next_in, Duration{1'000});
  }
}

TEST(MaintenanceCadence, BacksOffToOneSecondWhenIdleAndComesBackAtOnce) {
  MaintenanceCadence cadence;
  cadence.on_tick(100, Duration{1'000});
  Duration previous = cadence.interval();
  for (int i = 0; i < 20; ++i) {
    const Duration next = cadence.on_tick(100, previous).next_in;
    EXPECT_EQ(next, std::min(previous * 2, MaintenanceCadence::kIdleInterval));
    previous = next;
  }
  EXPECT_EQ(previous, MaintenanceCadence::kIdleInterval);
  // The first traffic after idling brings the fast tick back at the next tick.
  EXPECT_EQ(cadence.on_tick(101, previous).next_in, MaintenanceCadence::kBusyInterval);
}

TEST(MaintenanceCadence, SweepKeepsItsRateWhateverTheTickInterval) {
  for (const Duration step : {Duration{1'000}, Duration{3'700}, Duration{250'000}}) {
    MaintenanceCadence cadence;
    std::size_t swept = 0;
    std::size_t sweeps = 0;
    for (Duration t{0}; t < Duration{10'000'000}; t += step) {
      const auto tick = cadence.on_tick(0, step);
      if (tick.sweep_keys > 0) {
        EXPECT_GE(tick.sweep_keys, MaintenanceCadence::kMinSweepBatch);
        ++sweeps;
      }
      swept += tick.sweep_keys;
    }
    // Ten seconds at 10,000 keys a second, give or take one batch.
    EXPECT_NEAR(static_cast<double>(swept), 100'000.0,
                static_cast<double>(MaintenanceCadence::kMinSweepBatch))
        << "tick every " << step.count() << " us";
    EXPECT_GT(sweeps, 0u);
  }
}

TEST(MaintenanceCadence, AStalledListenerDoesNotCatchUpWithOneHugeSweep) {
  MaintenanceCadence cadence;
  const auto tick = cadence.on_tick(0, Duration{60'000'000});
  EXPECT_EQ(tick.sweep_keys, MaintenanceCadence::kSweepKeysPerSecond);
}

}  // namespace
}  // namespace pmcached::server

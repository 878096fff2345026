#include "server/maintenance_cadence.h"

#include <algorithm>

namespace pmcached::server {

MaintenanceCadence::Tick MaintenanceCadence::on_tick(std::uint64_t bytes_read,
                                                     Duration elapsed) noexcept {
  const bool busy = bytes_read != last_bytes_read_;
  last_bytes_read_ = bytes_read;
  interval_ = busy ? kBusyInterval : std::min(interval_ * 2, kIdleInterval);

  // Credit for the elapsed time, capped at one second's worth so a stalled listener does not
  // make up for it with one long sweep.
  const double earned =
      static_cast<double>(kSweepKeysPerSecond) * std::chrono::duration<double>(elapsed).count();
  sweep_credit_ =
      std::min(sweep_credit_ + std::max(earned, 0.0), static_cast<double>(kSweepKeysPerSecond));
  std::size_t sweep_keys = 0;
  if (sweep_credit_ >= static_cast<double>(kMinSweepBatch)) {
    sweep_keys = static_cast<std::size_t>(sweep_credit_);
    sweep_credit_ -= static_cast<double>(sweep_keys);
  }
  return {interval_, sweep_keys};
}

}  // namespace pmcached::server

// MaintenanceCadence: when the listener thread's maintenance tick comes next, and how many keys
// the expiry sweep may look at in it.
//
// While requests arrive (the server's bytes_read moved since the previous tick) the tick comes
// every millisecond; once a tick finds no traffic, the interval doubles, up to one second, so an
// idle server stays asleep. This is the shape of memcached's LRU maintainer (1 ms to 1 s).
//
// Why a busy server needs a thread that wakes every millisecond, although the tick has almost
// nothing to do: on a machine with fewer CPUs than busy threads (load generator and workers
// sharing two CPUs), a worker and a client thread on one CPU settle into turns of one scheduler
// tick each (4 ms at HZ=250), and a request that arrives at the start of the other's turn waits
// for all of it: p99 = 8 ms, two turns. A wake-up on that CPU every millisecond makes the
// scheduler choose again between them, so turns are cut short. docs/TAIL_LATENCY.md has the
// measurements (perf sched), the minimal reproducer with memcached itself, and what else was tried.
//
// The sweep keeps its rate of kSweepKeysPerSecond however often the tick comes: each tick earns
// credit for the time since the previous one, and the sweep runs once the credit covers a batch.
//
// Thread safety: none; the listener thread owns it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace pmcached::server {

class MaintenanceCadence {
 public:
  using Duration = std::chrono::microseconds;

  static constexpr Duration kBusyInterval{1'000};
  static constexpr Duration kIdleInterval{1'000'000};
  static constexpr std::size_t kSweepKeysPerSecond = 10'000;
  // The sweep waits until it may visit at least this many keys (a batch amortises its setup).
  static constexpr std::size_t kMinSweepBatch = 32;

  struct Tick {
    Duration next_in;        // when the next tick is due
    std::size_t sweep_keys;  // keys the expiry sweep may visit now (0: not this tick)
  };

  // The first tick is due after kBusyInterval.
  MaintenanceCadence() = default;

  // Called at each tick with the server's bytes_read so far and the time since the previous tick.
  Tick on_tick(std::uint64_t bytes_read, Duration elapsed) noexcept;

  [[nodiscard]] Duration interval() const noexcept { return interval_; }

 private:
  Duration interval_ = kBusyInterval;
  std::uint64_t last_bytes_read_ = 0;
  double sweep_credit_ = 0;  // keys the sweep has earned and not yet used
};

}  // namespace pmcached::server

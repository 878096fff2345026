// ServerStats: connection and traffic counters of the server (item counters live in the store).
//
// Thread safety: each worker thread writes only its own ThreadStats (relaxed atomics, one
// cache line each, so workers never contend); any thread may read totals() at any time.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "server/latency_histogram.h"

namespace pmcached::server {

// Where a request's time goes inside the server (`stats latency`, recorded with --latency-stats):
//   parse    parsing one command;
//   execute  executing one command (the store and the reply's bytes);
//   write    handing a batch of replies to the kernel (the send, which Asio makes at once);
//   request  from the read handler that completed a batch of commands to the end of its write.
// What a client sees beyond `request` was spent in the kernel or waiting for a CPU.
struct PhaseLatency {
  LatencyHistogram parse;
  LatencyHistogram execute;
  LatencyHistogram write;
  LatencyHistogram request;

  void reset() noexcept {
    parse.reset();
    execute.reset();
    write.reset();
    request.reset();
  }
};

struct alignas(64) ThreadStats {
  std::atomic<std::uint64_t> bytes_read{0};
  std::atomic<std::uint64_t> bytes_written{0};
  std::atomic<std::uint64_t> cmd_meta{0};
  std::atomic<std::uint64_t> conn_yields{0};
  std::atomic<std::uint64_t> store_too_large{0};  // storage commands refused as too large
  std::atomic<std::uint64_t> store_no_memory{0};  // ... for want of memory
  PhaseLatency latency;

  void add(std::atomic<std::uint64_t>& counter, std::uint64_t n) noexcept {
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
};

struct StatsTotals {
  std::uint64_t bytes_read = 0;
  std::uint64_t bytes_written = 0;
  std::uint64_t cmd_meta = 0;
  std::uint64_t conn_yields = 0;
  std::uint64_t store_too_large = 0;
  std::uint64_t store_no_memory = 0;
  std::uint64_t curr_connections = 0;
  std::uint64_t connection_structures = 0;
  std::uint64_t total_connections = 0;
  std::uint64_t rejected_connections = 0;
  bool accepting_conns = true;
  std::uint64_t listen_disabled_num = 0;
  std::uint64_t time_in_listen_disabled_us = 0;
};

class ServerStats {
 public:
  explicit ServerStats(std::size_t threads);

  [[nodiscard]] ThreadStats& thread(std::size_t index) noexcept { return threads_[index]; }
  [[nodiscard]] StatsTotals totals() const noexcept;
  // The phase histograms of every worker, summed.
  struct LatencySnapshot {
    LatencyHistogram::Snapshot parse, execute, write, request;
  };
  [[nodiscard]] LatencySnapshot latency() const noexcept;
  void reset() noexcept;

  std::atomic<std::uint64_t> curr_connections{0};
  std::atomic<std::uint64_t> total_connections{0};
  std::atomic<std::uint64_t> rejected_connections{0};
  // memcached's connection_structures: the most connections open at once, plus the listener.
  std::atomic<std::uint64_t> connection_structures{1};
  // Accepting paused for want of descriptors (memcached's names): episodes and their time.
  std::atomic<bool> accepting_conns{true};
  std::atomic<std::uint64_t> listen_disabled_num{0};
  std::atomic<std::uint64_t> time_in_listen_disabled_us{0};

 private:
  std::unique_ptr<ThreadStats[]> threads_;
  std::size_t thread_count_;
};

}  // namespace pmcached::server

#include "server/server_stats.h"

namespace pmcached::server {

ServerStats::ServerStats(std::size_t threads)
    : threads_(std::make_unique<ThreadStats[]>(threads)), thread_count_(threads) {}

StatsTotals ServerStats::totals() const noexcept {
  StatsTotals t;
  for (std::size_t i = 0; i < thread_count_; ++i) {
    const ThreadStats& s = threads_[i];
    t.bytes_read += s.bytes_read.load(std::memory_order_relaxed);
    t.bytes_written += s.bytes_written.load(std::memory_order_relaxed);
    t.cmd_meta += s.cmd_meta.load(std::memory_order_relaxed);
    t.conn_yields += s.conn_yields.load(std::memory_order_relaxed);
    t.store_too_large += s.store_too_large.load(std::memory_order_relaxed);
    t.store_no_memory += s.store_no_memory.load(std::memory_order_relaxed);
  }
  t.connection_structures = connection_structures.load(std::memory_order_relaxed);
  t.curr_connections = curr_connections.load(std::memory_order_relaxed);
  t.total_connections = total_connections.load(std::memory_order_relaxed);
  t.rejected_connections = rejected_connections.load(std::memory_order_relaxed);
  t.accepting_conns = accepting_conns.load(std::memory_order_relaxed);
  t.listen_disabled_num = listen_disabled_num.load(std::memory_order_relaxed);
  t.time_in_listen_disabled_us = time_in_listen_disabled_us.load(std::memory_order_relaxed);
  return t;
}

ServerStats::LatencySnapshot ServerStats::latency() const noexcept {
  LatencySnapshot l;
  for (std::size_t i = 0; i < thread_count_; ++i) {
    const PhaseLatency& p = threads_[i].latency;
    l.parse += p.parse.snapshot();
    l.execute += p.execute.snapshot();
    l.write += p.write.snapshot();
    l.request += p.request.snapshot();
  }
  return l;
}

// `stats reset` clears the traffic counters; like memcached it keeps curr_connections.
void ServerStats::reset() noexcept {
  for (std::size_t i = 0; i < thread_count_; ++i) {
    ThreadStats& s = threads_[i];
    s.bytes_read.store(0, std::memory_order_relaxed);
    s.bytes_written.store(0, std::memory_order_relaxed);
    s.cmd_meta.store(0, std::memory_order_relaxed);
    s.conn_yields.store(0, std::memory_order_relaxed);
    s.store_too_large.store(0, std::memory_order_relaxed);
    s.store_no_memory.store(0, std::memory_order_relaxed);
    s.latency.reset();
  }
  total_connections.store(0, std::memory_order_relaxed);
  rejected_connections.store(0, std::memory_order_relaxed);
  listen_disabled_num.store(0, std::memory_order_relaxed);
  time_in_listen_disabled_us.store(0, std::memory_order_relaxed);
}

}  // namespace pmcached::server

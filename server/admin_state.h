// AdminState: what the admin and monitoring commands share across the server: `stats detail`
// counters, log watchers, the lru_crawler and slab-automove settings, and how to list the
// connections for `stats conns`.
//
// Thread safety: every member is safe to use from any thread; list_connections is set once by
// the server before it accepts connections.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "server/log_watchers.h"
#include "server/prefix_stats.h"

namespace pmcached::server {

// One line group of `stats conns`. States are memcached's names for the ones pmcached has:
// conn_listening (a listener), conn_parse_cmd (running commands: the connection that asks is
// in this state), conn_waiting (idle, waiting for a command), conn_watch (a log watcher).
struct ConnectionInfo {
  int fd = -1;
  std::string addr;         // "tcp:1.2.3.4:5678" or "tcp6:[::1]:5678"
  std::string listen_addr;  // empty for a listener
  const char* state = "conn_waiting";
  std::int64_t last_command_at = 0;  // Unix seconds (0: none yet; a listener: server start)
};

struct AdminState {
  PrefixStats prefixes;  // stats detail
  LogWatchers watchers;  // watch
  // lru_crawler: pmcached's crawler is the background expiry sweep (server.cc).
  std::atomic<bool> crawler_enabled{true};
  std::atomic<std::uint32_t> crawler_sleep_us{100};
  std::atomic<std::uint32_t> crawler_tocrawl{0};
  std::atomic<std::uint64_t> crawler_starts{0};         // sweeps that ran (lru_crawler_starts)
  std::atomic<std::uint64_t> crawler_reclaimed{0};      // items the sweep reclaimed
  std::atomic<std::uint64_t> crawler_items_checked{0};  // keys the sweep visited
  std::atomic<bool> crawl_requested{false};             // `lru_crawler crawl`: sweep all keys once
  // slabs automove: recorded and shown; the heap moves chunks between classes by itself.
  std::atomic<std::uint32_t> slab_automove{1};
  std::atomic<double> slab_automove_ratio{0.8};
  // cache_memlimit's last value in bytes (0: none; `-m` stands).
  std::atomic<std::uint64_t> maxbytes{0};
  std::function<std::vector<ConnectionInfo>()> list_connections;
};

}  // namespace pmcached::server

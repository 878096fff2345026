// ConnectionManager: counts open connections for -c and finds them all at shutdown.
//
// Thread safety: all methods are thread-safe (connections live on different workers).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <utility>

#include "server/admin_state.h"
#include "server/server_stats.h"

namespace pmcached::server {

class Connection;

class ConnectionManager {
 public:
  ConnectionManager(std::size_t max_connections, ServerStats& stats);

  // Reserves a slot for a new connection; false when -c is reached.
  [[nodiscard]] bool try_reserve();
  // Gives back a slot reserved by try_reserve() that was never used.
  void release_reservation();

  // `callback` runs (on the closing connection's thread) after each connection has closed its
  // socket and left. Set it before the first connection is added.
  void notify_on_close(std::function<void()> callback) { on_close_ = std::move(callback); }

  void add(const std::shared_ptr<Connection>& connection);
  void remove(const std::shared_ptr<Connection>& connection);

  // Asks every connection to finish what it has received and close.
  void stop_all();

  [[nodiscard]] std::size_t open_connections() const;

  // What `stats conns` reports of each open connection.
  [[nodiscard]] std::vector<ConnectionInfo> describe_all() const;

  // Drops every connection without closing it gracefully (server teardown only).
  void forget_all();

 private:
  mutable std::mutex mutex_;
  std::unordered_set<std::shared_ptr<Connection>> connections_;
  std::size_t reserved_ = 0;
  std::size_t max_connections_;
  ServerStats& stats_;
  std::function<void()> on_close_;
};

}  // namespace pmcached::server

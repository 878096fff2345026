#include "server/connection_manager.h"

#include <vector>

#include "server/connection.h"

namespace pmcached::server {

ConnectionManager::ConnectionManager(std::size_t max_connections, ServerStats& stats)
    : max_connections_(max_connections), stats_(stats) {}

bool ConnectionManager::try_reserve() {
  std::lock_guard lock(mutex_);
  if (reserved_ >= max_connections_) return false;
  ++reserved_;
  return true;
}

void ConnectionManager::release_reservation() {
  std::lock_guard lock(mutex_);
  --reserved_;
}

void ConnectionManager::add(const std::shared_ptr<Connection>& connection) {
  {
    std::lock_guard lock(mutex_);
    connections_.insert(connection);
  }
  const std::uint64_t open = stats_.curr_connections.fetch_add(1, std::memory_order_relaxed) + 1;
  std::uint64_t most = stats_.connection_structures.load(std::memory_order_relaxed);
  while (open + 1 > most && !stats_.connection_structures.compare_exchange_weak(most, open + 1)) {
  }
  stats_.total_connections.fetch_add(1, std::memory_order_relaxed);
}

void ConnectionManager::remove(const std::shared_ptr<Connection>& connection) {
  bool removed = false;
  {
    std::lock_guard lock(mutex_);
    if (connections_.erase(connection) > 0) {
      --reserved_;
      removed = true;
    }
  }
  if (!removed) return;
  stats_.curr_connections.fetch_sub(1, std::memory_order_relaxed);
  if (on_close_) on_close_();
}

void ConnectionManager::stop_all() {
  std::vector<std::shared_ptr<Connection>> all;
  {
    std::lock_guard lock(mutex_);
    all.assign(connections_.begin(), connections_.end());
  }
  for (const auto& connection : all) connection->stop();
}

void ConnectionManager::forget_all() {
  std::lock_guard lock(mutex_);
  connections_.clear();
}

std::vector<ConnectionInfo> ConnectionManager::describe_all() const {
  std::vector<std::shared_ptr<Connection>> all;
  {
    std::lock_guard lock(mutex_);
    all.assign(connections_.begin(), connections_.end());
  }
  std::vector<ConnectionInfo> infos;
  infos.reserve(all.size());
  for (const auto& connection : all) infos.push_back(connection->info());
  return infos;
}

std::size_t ConnectionManager::open_connections() const {
  std::lock_guard lock(mutex_);
  return connections_.size();
}

}  // namespace pmcached::server

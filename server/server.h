// Server: the listener, the worker threads and graceful shutdown.
//
// One EventLoop per worker thread (-t); each accepted connection lives on one worker,
// chosen round-robin, so a connection's handlers never run concurrently. The listener
// and the signal handling run on the thread that calls run(). SIGINT/SIGTERM (or the
// `shutdown` command with -A) stop accepting, let every connection answer what it has
// received, then return from run() so the caller can close the store cleanly.
//
// Out of descriptors (accept fails with EMFILE, ENFILE, ENOBUFS or ENOMEM), the listener stops
// accepting until a connection closes, or a short timer as a fallback, rather than retrying at
// once: each such episode counts in listen_disabled_num and logs one line at most (memcached).
//
// Thread safety: construct and run() from one thread; stop() is safe from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "config/options.h"
#include "engine/open_store.h"
#include "engine/store/store.h"
#include "protocol/parser.h"
#include "server/command_executor.h"
#include "server/connection_manager.h"
#include "server/maintenance_cadence.h"
#include "server/server_stats.h"

namespace pmcached::server {

class Server {
 public:
  // Binds the listener; throws std::system_error if the address cannot be used.
  // `connection_slots` (0: -c) caps simultaneous connections when the open-file limit admits
  // fewer than -c (see descriptor_limit.h).
  Server(const config::Options& options, engine::OpenStore& storage,
         std::size_t connection_slots = 0);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The bound port (useful with -p 0).
  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }

  // Serves until stop() or a signal; then drains connections and joins the workers.
  void run();

  // Begins a graceful stop. Thread-safe and idempotent.
  void stop();

 private:
  struct Worker;

  void accept_next();
  void pause_accepting(const boost::system::error_code& error);
  void resume_accepting();
  void end_pause();
  void on_stop();
  void maintain();

  const config::Options& options_;
  ServerStats stats_;
  ServerContext context_;
  boost::asio::io_context listener_context_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::signal_set signals_;
  boost::asio::steady_timer drain_deadline_;
  boost::asio::steady_timer maintenance_timer_;
  boost::asio::steady_timer accept_retry_;
  ConnectionManager connections_;
  protocol::ParserLimits limits_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
  std::size_t next_worker_ = 0;
  std::size_t finished_workers_ = 0;
  std::uint16_t port_ = 0;
  bool stopping_ = false;
  MaintenanceCadence cadence_;
  std::chrono::steady_clock::time_point last_maintenance_{};
  // Accept-pause state: accept_paused_ is read by workers (to wake the listener when a
  // connection closes); the rest belongs to the listener thread.
  std::atomic<bool> accept_paused_{false};
  bool accept_retry_armed_ = false;
  std::chrono::steady_clock::time_point paused_since_{};
  std::size_t connections_at_pause_ = 0;
  std::optional<std::chrono::steady_clock::time_point> last_pause_warning_;
};

}  // namespace pmcached::server

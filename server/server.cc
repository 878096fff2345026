#include "server/server.h"

#include <cerrno>
#include <chrono>
#include <csignal>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include "server/connection.h"
#include "server/event_loop.h"
#include "server/set_batch.h"

namespace pmcached::server {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

// How long connections get to answer what they received once a shutdown begins.
constexpr auto kDrainTimeout = std::chrono::seconds(5);
// Accepting paused for want of descriptors resumes when a connection closes, or after this.
constexpr auto kAcceptRetryInterval = std::chrono::milliseconds(100);
// At most one warning per this interval, however many pause episodes there are.
constexpr auto kPauseWarningInterval = std::chrono::seconds(10);

// Errors that retrying at once cannot cure: the process or system is out of descriptors or
// socket memory (memcached stops accepting on EMFILE likewise).
bool out_of_resources(const boost::system::error_code& error) {
  if (error.category() != boost::system::system_category()) return false;
  switch (error.value()) {
    case EMFILE:
    case ENFILE:
    case ENOBUFS:
    case ENOMEM: return true;
    default: return false;
  }
}

}  // namespace

struct Server::Worker {
  Worker(ServerContext& context, ThreadStats& thread_stats)
      : executor(context, thread_stats), stats(thread_stats), set_batch(context.store, loop.io()) {}

  EventLoop loop;  // its connections' sockets and the handlers posted to it
  CommandExecutor executor;
  ThreadStats& stats;
  SetBatch set_batch;  // group commit of this worker's sets
};

Server::Server(const config::Options& options, engine::OpenStore& storage,
               std::size_t connection_slots)
    : options_(options),
      stats_(options.threads),
      context_{storage.store(), stats_, options, storage.store().now(), {}, {}, &storage},
      listener_context_(1),
      acceptor_(listener_context_),
      signals_(listener_context_, SIGINT, SIGTERM),
      drain_deadline_(listener_context_),
      maintenance_timer_(listener_context_),
      accept_retry_(listener_context_),
      connections_(connection_slots != 0 ? connection_slots : options.max_connections, stats_) {
  context_.verbosity = options.verbosity;
  context_.request_shutdown = [this] { stop(); };
  limits_.item_size_max = options.item_size_max;
  // A closed connection frees a descriptor: a paused listener tries again at once.
  connections_.notify_on_close([this] {
    if (accept_paused_.load(std::memory_order_relaxed)) {
      asio::post(listener_context_, [this] { resume_accepting(); });
    }
  });

  const tcp::endpoint endpoint(asio::ip::make_address(options.listen_address), options.port);
  acceptor_.open(endpoint.protocol());
  acceptor_.set_option(tcp::acceptor::reuse_address(true));
  acceptor_.bind(endpoint);
  acceptor_.listen(1024);
  port_ = acceptor_.local_endpoint().port();
  // `stats conns`: the listener, then every connection. The listener's line is made here, once:
  // the acceptor belongs to the listener thread and must not be read from a worker.
  ConnectionInfo listener;
  listener.fd = static_cast<int>(acceptor_.native_handle());
  listener.addr = describe_endpoint(acceptor_.local_endpoint());
  listener.state = "conn_listening";
  context_.admin.list_connections = [this, listener = std::move(listener)] {
    std::vector<ConnectionInfo> all = connections_.describe_all();
    all.push_back(listener);
    return all;
  };

  for (unsigned i = 0; i < options.threads; ++i) {
    workers_.push_back(std::make_unique<Worker>(context_, stats_.thread(i)));
  }
}

Server::~Server() {
  for (auto& worker : workers_) worker->loop.stop();
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  // Connections refer to the workers' loops: drop them first.
  connections_.forget_all();
  workers_.clear();
}

void Server::run() {
  std::signal(SIGPIPE, SIG_IGN);
  signals_.async_wait([this](const boost::system::error_code& error, int signal) {
    if (error) return;
    spdlog::info("received signal {}; shutting down", signal);
    on_stop();
  });
  for (auto& worker : workers_) {
    threads_.emplace_back([this, &loop = worker->loop] {
      loop.run();
      // The last worker to finish ends the drain wait, so run() can return.
      asio::post(listener_context_, [this] {
        if (++finished_workers_ == workers_.size()) drain_deadline_.cancel();
      });
    });
  }
  accept_next();
  last_maintenance_ = std::chrono::steady_clock::now();
  maintain();
  listener_context_.run();
  for (auto& thread : threads_) thread.join();
  threads_.clear();
  spdlog::info("all connections closed");
}

void Server::stop() {
  asio::post(listener_context_, [this] { on_stop(); });
}

void Server::on_stop() {
  if (stopping_) return;
  stopping_ = true;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  signals_.cancel(ignored);
  maintenance_timer_.cancel();
  accept_retry_.cancel();
  connections_.stop_all();
  // Workers leave run() once their last connection has closed.
  for (auto& worker : workers_) worker->loop.drain();
  drain_deadline_.expires_after(kDrainTimeout);
  drain_deadline_.async_wait([this](const boost::system::error_code& error) {
    if (error) return;
    spdlog::warn("connections did not drain within {}s; closing them",
                 std::chrono::duration_cast<std::chrono::seconds>(kDrainTimeout).count());
    for (auto& worker : workers_) worker->loop.stop();
  });
}

// The listener thread's periodic work, at the cadence of maintenance_cadence.h: expired items
// are reclaimed lazily on access, and here in the background, a bounded number of keys per
// second. While the server is busy the tick comes every millisecond; the header says why.
void Server::maintain() {
  maintenance_timer_.expires_after(cadence_.interval());
  maintenance_timer_.async_wait([this](const boost::system::error_code& error) {
    if (error || stopping_) return;
    const auto now = std::chrono::steady_clock::now();
    const auto tick = cadence_.on_tick(
        stats_.totals().bytes_read,
        std::chrono::duration_cast<MaintenanceCadence::Duration>(now - last_maintenance_));
    last_maintenance_ = now;
    // The sweep is pmcached's LRU crawler: `lru_crawler disable` stops it, `lru_crawler crawl`
    // asks for one pass over every key.
    AdminState& admin = context_.admin;
    std::size_t sweep_keys = tick.sweep_keys;
    if (admin.crawl_requested.exchange(false, std::memory_order_relaxed)) {
      sweep_keys = std::max<std::size_t>(sweep_keys, context_.store.stats().curr_items + 1);
    }
    if (sweep_keys > 0 && admin.crawler_enabled.load(std::memory_order_relaxed)) {
      const engine::SweepResult sweep = context_.store.reclaim_expired(sweep_keys);
      admin.crawler_starts.fetch_add(1, std::memory_order_relaxed);
      admin.crawler_reclaimed.fetch_add(sweep.reclaimed, std::memory_order_relaxed);
      admin.crawler_items_checked.fetch_add(sweep.visited, std::memory_order_relaxed);
      if (sweep.reclaimed > 0) spdlog::debug("expiry sweep reclaimed {} items", sweep.reclaimed);
    }
    maintain();
  });
}

void Server::accept_next() {
  Worker& worker = *workers_[next_worker_];
  next_worker_ = (next_worker_ + 1) % workers_.size();
  // Accepted on the listener's io_context: the worker's loop waits for the descriptor itself,
  // and its io_context owns none (event_loop.h says why).
  acceptor_.async_accept(
      [this, &worker](const boost::system::error_code& error, tcp::socket socket) {
        if (error) {
          if (error == asio::error::operation_aborted || stopping_) return;
          if (out_of_resources(error)) {
            pause_accepting(error);
            return;
          }
          // A failure of this one connection (e.g. reset before it was accepted): keep accepting.
          spdlog::warn("accept failed: {}", error.message());
          accept_next();
          return;
        }
        if (accept_paused_.load(std::memory_order_relaxed)) end_pause();
        if (!connections_.try_reserve()) {
          // memcached's maxconns_fast behaviour: tell the client and close at once.
          stats_.rejected_connections.fetch_add(1, std::memory_order_relaxed);
          boost::system::error_code ignored;
          asio::write(socket, asio::buffer(protocol::reply::kTooManyConnections), ignored);
          socket.close(ignored);
          accept_next();
          return;
        }
        boost::system::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        auto connection = std::make_shared<Connection>(
            std::move(socket), worker.loop, worker.executor, worker.stats, connections_, limits_,
            options_.latency_stats, worker.set_batch.enabled() ? &worker.set_batch : nullptr);
        connections_.add(connection);
        worker.loop.post([connection] { connection->start(); });
        accept_next();
      });
}

// Stops accepting until a connection closes or the retry timer fires. The connections that
// keep arriving wait in the listen backlog meanwhile. A new episode (the first failure after
// an accept succeeded or a connection closed) is counted and logged; the timer's retries
// within it are not.
void Server::pause_accepting(const boost::system::error_code& error) {
  const auto now = std::chrono::steady_clock::now();
  if (!accept_paused_.load(std::memory_order_relaxed)) {
    accept_paused_.store(true, std::memory_order_relaxed);
    paused_since_ = now;
    connections_at_pause_ = connections_.open_connections();
    stats_.accepting_conns.store(false, std::memory_order_relaxed);
    stats_.listen_disabled_num.fetch_add(1, std::memory_order_relaxed);
    if (!last_pause_warning_ || now - *last_pause_warning_ >= kPauseWarningInterval) {
      last_pause_warning_ = now;
      spdlog::warn(
          "accept failed: {}; not accepting until a connection closes "
          "(listen_disabled_num {}; further pauses within {}s are not logged)",
          error.message(), stats_.listen_disabled_num.load(std::memory_order_relaxed),
          std::chrono::duration_cast<std::chrono::seconds>(kPauseWarningInterval).count());
    }
  }
  accept_retry_armed_ = true;
  accept_retry_.expires_after(kAcceptRetryInterval);
  accept_retry_.async_wait([this](const boost::system::error_code& timer_error) {
    if (timer_error || stopping_ || !accept_retry_armed_) return;
    accept_retry_armed_ = false;
    // A close whose wake-up raced with the pause still ends the episode.
    if (connections_.open_connections() < connections_at_pause_) end_pause();
    accept_next();
  });
}

// A connection closed while paused: a descriptor is free, the episode is over (as in
// memcached, where closing a connection re-enables accepting); try again now. Should accept
// fail again, that is a new episode. The timer's retries do not end an episode.
void Server::resume_accepting() {
  if (stopping_ || !accept_retry_armed_) return;
  accept_retry_armed_ = false;
  accept_retry_.cancel();
  end_pause();
  accept_next();
}

void Server::end_pause() {
  accept_paused_.store(false, std::memory_order_relaxed);
  stats_.accepting_conns.store(true, std::memory_order_relaxed);
  const auto paused_for = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - paused_since_);
  stats_.time_in_listen_disabled_us.fetch_add(static_cast<std::uint64_t>(paused_for.count()),
                                              std::memory_order_relaxed);
  spdlog::debug("accepting connections again after {} us", paused_for.count());
}

}  // namespace pmcached::server

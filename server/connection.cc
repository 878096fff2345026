#include "server/connection.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include "server/connection_manager.h"
#include "server/set_batch.h"

namespace pmcached::server {

namespace asio = boost::asio;

namespace {

// Reads never ask for less than this, so small pipelined commands arrive in few syscalls.
constexpr std::size_t kMinReadSize = 4u << 10;
// Room for a command line in front of the largest data block.
constexpr std::size_t kLineAllowance = 64u << 10;

// Log lines queued for a watcher that does not read beyond this are dropped.
constexpr std::size_t kWatcherBacklog = 4u << 20;

std::uint64_t nanoseconds(std::chrono::steady_clock::duration d) {
  return static_cast<std::uint64_t>(
      std::max<std::int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()));
}

}  // namespace

std::string describe_endpoint(const asio::ip::tcp::endpoint& endpoint) {
  const asio::ip::address address = endpoint.address();
  const std::string port = std::to_string(endpoint.port());
  if (address.is_v6()) return "tcp6:[" + address.to_string() + "]:" + port;
  return "tcp:" + address.to_string() + ":" + port;
}

Connection::Connection(asio::ip::tcp::socket socket, CommandExecutor& executor,
                       ThreadStats& thread_stats, ConnectionManager& manager,
                       const protocol::ParserLimits& limits, bool measure_latency,
                       SetBatch* set_batch)
    : socket_(std::move(socket)),
      executor_(executor),
      thread_stats_(thread_stats),
      manager_(manager),
      parser_(limits),
      binary_parser_(limits),
      max_input_(std::max(limits.item_size_max + kLineAllowance,
                          limits.max_get_line_length + kLineAllowance)),
      set_batch_(set_batch),
      input_(kInitialInputSize),
      measure_latency_(measure_latency) {
  boost::system::error_code error;
  fd_ = static_cast<int>(socket_.native_handle());
  socket_.non_blocking(true, error);  // write_pending() sends without blocking
  if (const auto remote = socket_.remote_endpoint(error); !error) addr_ = describe_endpoint(remote);
  if (const auto local = socket_.local_endpoint(error); !error)
    listen_addr_ = describe_endpoint(local);
  last_command_at_.store(executor_.context().store.now(), std::memory_order_relaxed);
}

ConnectionInfo Connection::info() const {
  ConnectionInfo info;
  info.fd = fd_;
  info.addr = addr_;
  info.listen_addr = listen_addr_;
  info.state = state_.load(std::memory_order_relaxed);
  info.last_command_at = last_command_at_.load(std::memory_order_relaxed);
  return info;
}

void Connection::start_watching(std::uint16_t flags) {
  watching_ = true;
  state_.store("conn_watch", std::memory_order_relaxed);
  input_begin_ = input_end_;  // memcached stops reading the commands after `watch`
  std::weak_ptr<Connection> weak = weak_from_this();
  watch_id_ = executor_.context().admin.watchers.add(
      flags, [weak](const std::shared_ptr<const std::string>& line) {
        const std::shared_ptr<Connection> self = weak.lock();
        if (!self) return false;
        asio::post(self->socket_.get_executor(), [self, line] { self->deliver_log(*line); });
        return true;
      });
}

void Connection::deliver_log(const std::string& line) {
  if (closed_ || close_after_write_) return;
  if (pending_.size() + line.size() > kWatcherBacklog) return;  // a watcher that does not read
  pending_.append(line);
  write_pending();
}

void Connection::start() { read_more(); }

void Connection::stop() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    if (self->closed_) return;
    self->input_closed_ = true;
    boost::system::error_code ignored;
    // Wakes a pending read with EOF; replies to commands already received still go out.
    self->socket_.shutdown(asio::ip::tcp::socket::shutdown_receive, ignored);
    if (!self->reading_ && !self->writing_ && !self->awaiting_sets()) self->close();
  });
}

void Connection::make_room_for_input() {
  if (input_begin_ == input_end_) {
    input_begin_ = input_end_ = 0;
    // Give back the memory of an earlier large request.
    if (input_.size() > 4 * kInitialInputSize) {
      input_.resize(kInitialInputSize);
      input_.shrink_to_fit();
    }
  }
  if (input_.size() - input_end_ >= kMinReadSize) return;
  if (input_begin_ > 0) {
    std::memmove(input_.data(), input_.data() + input_begin_, input_end_ - input_begin_);
    input_end_ -= input_begin_;
    input_begin_ = 0;
  }
  if (input_.size() - input_end_ < kMinReadSize && input_.size() < max_input_) {
    input_.resize(std::min(max_input_, input_.size() * 2));
  }
}

void Connection::read_more() {
  if (reading_ || input_closed_ || close_after_write_ || closed_) return;
  if (pending_.size() >= kOutputHighWater) return;  // back-pressure: wait for the write
  reading_ = true;
  // The read starts after the handlers already queued on this worker have run. Started at once,
  // right after a reply went out, the receive nearly always finds the socket empty (the client
  // has not had the reply yet): one wasted recvfrom per request, 7-11% of the server's CPU per
  // SET (measured pinned, dram and wort). Started a round later, it usually finds the next
  // request without waiting for epoll (issue 16, docs/TAIL_LATENCY.md).
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->start_read(); });
}

void Connection::start_read() {
  // A connection that closes once its last replies are out reads no more (as read_more checks).
  // Nor does one whose sets wait in the batch: their requests view input_, which making room
  // would move or free (a read posted before a write completed and a set was deferred);
  // finish_set() starts reading again.
  if (closed_ || close_after_write_ || awaiting_sets()) {
    reading_ = false;
    return;
  }
  make_room_for_input();
  if (input_end_ == input_.size()) {
    // The parser wants more than the largest request we accept; memcached gives up too.
    spdlog::debug("connection input limit reached; closing");
    reading_ = false;
    pending_.append(protocol::reply::kReadLimit);
    close_after_write_ = true;
    write_pending();
    return;
  }
  const asio::mutable_buffer room =
      asio::buffer(input_.data() + input_end_, input_.size() - input_end_);
  if (!std::exchange(read_after_sets_, false)) {
    // Receive now and handle what came in this turn: receive, execute, reply, as memcached does.
    // (Asio's async_read_some queues even a receive that succeeds at once as a completion for a
    // later turn, so a worker read all its ready connections before it answered any.)
    boost::system::error_code error;
    const std::size_t bytes = socket_.read_some(room, error);
    if (error != asio::error::would_block && error != asio::error::try_again) {
      on_read(error, bytes);
      return;
    }
  }
  // Nothing there yet, or the batch has just answered this connection's sets together with
  // everyone else's, so that its next request is most likely not sent yet: Asio waits for it.
  // (Asio receives once more before it queues the wait, as its edge-triggered epoll needs; an
  // async_wait would instead re-arm the descriptor with an epoll_ctl, a system call as well.)
  socket_.async_read_some(
      room, [self = shared_from_this()](const boost::system::error_code& error, std::size_t bytes) {
        self->on_read(error, bytes);
      });
}

void Connection::on_read(const boost::system::error_code& error, std::size_t bytes) {
  reading_ = false;
  if (closed_) return;
  if (measure_latency_) read_at_ = Clock::now();
  if (error) {
    // EOF or reset: answer what was received (as memcached does for `printf ... | nc`).
    input_closed_ = true;
  } else {
    input_end_ += bytes;
    thread_stats_.add(thread_stats_.bytes_read, bytes);
  }
  process_input();
}

void Connection::process_input() {
  if (awaiting_sets()) return;               // finish_set() goes on
  if (watching_) input_begin_ = input_end_;  // a watcher's input is not commands
  executor_.set_client_fd(fd_);
  for (;;) {
    execute_commands();
    if (awaiting_sets()) return;
    const bool held_back = pending_.size() >= kOutputHighWater && !watching_;
    if (held_back) thread_stats_.add(thread_stats_.conn_yields, 1);
    if (!watching_) state_.store("conn_waiting", std::memory_order_relaxed);
    write_pending();
    // Replies that went out at once make room for the commands back-pressure held back.
    if (!held_back || writing_ || closed_) break;
  }
  if (input_closed_ && !writing_ && pending_.empty()) {
    close();
    return;
  }
  read_more();
}

void Connection::execute_commands() {
  if (!watching_) state_.store("conn_parse_cmd", std::memory_order_relaxed);
  while (!watching_ && !close_after_write_ && pending_.size() < kOutputHighWater) {
    const Clock::time_point parse_start = measure_latency_ ? Clock::now() : Clock::time_point{};
    if (wire_ == Wire::kUndecided && !unparsed().empty()) {
      wire_ = static_cast<std::uint8_t>(unparsed().front()) == protocol::binary::kRequestMagic
                  ? Wire::kBinary
                  : Wire::kText;
    }
    const protocol::ParseResult result = wire_ == Wire::kBinary
                                             ? binary_parser_.parse(unparsed(), command_)
                                             : parser_.parse(unparsed(), command_);
    if (result.status == protocol::ParseStatus::kNeedMore) break;
    input_begin_ += result.consumed;
    Clock::time_point execute_start{};
    if (measure_latency_) {
      execute_start = Clock::now();
      thread_stats_.latency.parse.record(nanoseconds(execute_start - parse_start));
    }
    if (result.status == protocol::ParseStatus::kComplete && set_batch_ != nullptr &&
        defer_set(execute_start)) {
      // A pipeline's following sets join the same batch.
      if (sets_waiting_ == kMaxWaitingSets) return;
      continue;
    }
    if (awaiting_sets()) {
      holding_ = true;
      held_ = result;
      held_start_ = execute_start;
      return;
    }
    handle(result, execute_start);
  }
}

bool Connection::defer_set(Clock::time_point execute_start) {
  if (sets_waiting_ == waiting_sets_.size()) waiting_sets_.emplace_back();
  WaitingSet& waiting = waiting_sets_[sets_waiting_];
  if (!executor_.defer_set(command_, waiting.set)) return false;
  ++sets_waiting_;
  waiting.start = execute_start;
  set_batch_->add(shared_from_this(), waiting.set.request);
  return true;
}

void Connection::handle(const protocol::ParseResult& result, Clock::time_point execute_start) {
  switch (result.status) {
    case protocol::ParseStatus::kComplete:
      switch (executor_.execute(command_, pending_)) {
        case AfterCommand::kContinue: break;
        case AfterCommand::kClose: close_after_write_ = true; break;
        case AfterCommand::kShutdown:
          close_after_write_ = true;
          executor_.request_shutdown();
          break;
        case AfterCommand::kWatch: start_watching(command_.admin.watch); break;
      }
      last_command_at_.store(executor_.context().store.now(), std::memory_order_relaxed);
      if (measure_latency_) {
        thread_stats_.latency.execute.record(nanoseconds(Clock::now() - execute_start));
      }
      break;
    case protocol::ParseStatus::kError:
      // memcached's silent close (conn_closing) drops the replies it has not yet sent.
      if (result.close_connection && result.error_reply.empty()) pending_.clear();
      pending_.append(result.error_reply);
      if (result.close_connection) close_after_write_ = true;
      break;
    case protocol::ParseStatus::kSkipped:
    case protocol::ParseStatus::kNeedMore: break;
  }
}

void Connection::finish_set(const engine::StoreOutcome& outcome) {
  const WaitingSet& waiting = waiting_sets_[sets_finished_++];
  if (!closed_) {
    executor_.set_client_fd(fd_);
    executor_.finish_set(waiting.set, outcome, pending_);
    // A set's execution includes its wait in the batch.
    if (measure_latency_) {
      thread_stats_.latency.execute.record(nanoseconds(Clock::now() - waiting.start));
    }
  }
  if (sets_finished_ < sets_waiting_) return;
  sets_waiting_ = 0;
  sets_finished_ = 0;
  const bool held = std::exchange(holding_, false);
  if (closed_) return;
  last_command_at_.store(executor_.context().store.now(), std::memory_order_relaxed);
  if (held) handle(held_, held_start_);
  read_after_sets_ = true;
  process_input();
}

void Connection::write_pending() {
  if (writing_ || closed_) return;
  if (pending_.empty()) {
    if (close_after_write_) close();
    return;
  }
  const Clock::time_point write_start = measure_latency_ ? Clock::now() : Clock::time_point{};
  // Replies go to the socket at once (it is non-blocking); only what it cannot take now, a large
  // reply or one to a client that does not read, waits for Asio. Sent here, a reply costs no
  // completion handler.
  boost::system::error_code send_error;
  const std::size_t sent = socket_.write_some(asio::buffer(pending_), send_error);
  if (send_error && send_error != asio::error::would_block &&
      send_error != asio::error::try_again) {
    close();
    return;
  }
  thread_stats_.add(thread_stats_.bytes_written, sent);
  if (sent == pending_.size()) {
    pending_.clear();
  } else {
    writing_ = true;
    sending_.swap(pending_);
    pending_.clear();
    asio::async_write(
        socket_, asio::buffer(sending_.data() + sent, sending_.size() - sent),
        [self = shared_from_this()](const boost::system::error_code& error, std::size_t bytes) {
          self->on_write(error, bytes);
        });
  }
  if (measure_latency_) {
    const Clock::time_point now = Clock::now();
    thread_stats_.latency.write.record(nanoseconds(now - write_start));
    thread_stats_.latency.request.record(nanoseconds(now - read_at_));
  }
  if (!writing_ && close_after_write_) close();
}

void Connection::on_write(const boost::system::error_code& error, std::size_t bytes) {
  writing_ = false;
  if (closed_) return;
  if (error) {
    close();
    return;
  }
  thread_stats_.add(thread_stats_.bytes_written, bytes);
  sending_.clear();
  if (sending_.capacity() > 4 * kOutputHighWater) sending_.shrink_to_fit();
  // Input left unparsed by back-pressure can be processed now.
  process_input();
}

void Connection::close() {
  if (closed_) return;
  closed_ = true;
  if (watch_id_ != 0) executor_.context().admin.watchers.remove(watch_id_);
  boost::system::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  manager_.remove(shared_from_this());
}

}  // namespace pmcached::server

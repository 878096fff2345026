#include "server/connection.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

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

Connection::Connection(asio::ip::tcp::socket socket, EventLoop& loop, CommandExecutor& executor,
                       ThreadStats& thread_stats, ConnectionManager& manager,
                       const protocol::ParserLimits& limits, bool measure_latency,
                       SetBatch* set_batch)
    : loop_(loop),
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
  socket.non_blocking(true, error);  // receives and sends never block
  if (const auto remote = socket.remote_endpoint(error); !error) addr_ = describe_endpoint(remote);
  if (const auto local = socket.local_endpoint(error); !error)
    listen_addr_ = describe_endpoint(local);
  // From here the descriptor is the connection's, waited for in its worker's EventLoop.
  fd_ = static_cast<int>(socket.release(error));
  if (error) fd_ = -1;
  last_command_at_.store(executor_.context().store.now(), std::memory_order_relaxed);
}

// Only a connection that never closed gets here with its socket: one dropped at the server's
// end, maybe by the destruction of a handler that held it, when the worker's EventLoop may be
// gone already. Closing the descriptor takes it out of the epoll set as well.
Connection::~Connection() {
  if (!closed_ && fd_ >= 0) ::close(fd_);
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
        self->loop_.post([self, line] { self->deliver_log(*line); });
        return true;
      });
}

void Connection::deliver_log(const std::string& line) {
  if (closed_ || close_after_write_) return;
  if (pending_.size() + line.size() > kWatcherBacklog) return;  // a watcher that does not read
  pending_.append(line);
  write_pending();
}

void Connection::start() {
  if (fd_ < 0 || !loop_.add(fd_, *this, EPOLLIN)) {
    spdlog::warn("cannot wait for a client socket: {}", std::strerror(errno));
    close();
    return;
  }
  interest_ = EPOLLIN;
  read_more();
}

void Connection::stop() {
  loop_.post([self = shared_from_this()] {
    if (self->closed_) return;
    self->input_closed_ = true;
    self->reading_ = false;
    ::shutdown(self->fd_, SHUT_RD);
    // Replies to commands already received still go out (process_input closes after them);
    // a write in flight or sets in the batch go on to process_input themselves.
    if (!self->writing_ && !self->awaiting_sets()) self->process_input();
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
  if (reading_ || input_closed_ || close_after_write_ || closed_ || awaiting_sets()) return;
  if (pending_.size() >= kOutputHighWater) return;  // back-pressure: wait for the write
  reading_ = true;
  // The socket stays watched for input while the connection does not want it, until the set
  // reports input then (on_ready); only then is it narrowed, and widened here again.
  if ((interest_ & EPOLLIN) == 0) set_interest(interest_ | EPOLLIN);
}

void Connection::on_ready(std::uint32_t events) {
  const std::shared_ptr<Connection> self = shared_from_this();  // close() may drop the last owner
  if (closed_) return;
  const bool failed = (events & (EPOLLERR | EPOLLHUP)) != 0;
  if (writing_ && (failed || (events & EPOLLOUT) != 0)) continue_write();
  if (closed_ || (!failed && (events & EPOLLIN) == 0)) return;
  if (reading_) {
    receive();
  } else if ((interest_ & EPOLLIN) != 0) {
    // Input (or the end of it) the connection does not want now: a level-triggered set would
    // report it again every turn until then.
    set_interest(interest_ & ~std::uint32_t{EPOLLIN});
  }
}

void Connection::receive() {
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
  const ssize_t received = ::recv(fd_, input_.data() + input_end_, input_.size() - input_end_, 0);
  if (received < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  // A failed receive (a reset) ends the input as EOF does.
  on_read(received <= 0, received > 0 ? static_cast<std::size_t>(received) : 0);
}

void Connection::on_read(bool end_of_input, std::size_t bytes) {
  reading_ = false;
  if (measure_latency_) read_at_ = Clock::now();
  if (end_of_input) {
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
  process_input();
}

void Connection::write_pending() {
  if (writing_ || closed_) return;
  if (pending_.empty()) {
    if (close_after_write_) close();
    return;
  }
  const Clock::time_point write_start = measure_latency_ ? Clock::now() : Clock::time_point{};
  // Replies go to the socket at once; only what it cannot take now, a large reply or one to a
  // client that does not read, waits for the set to report room (continue_write).
  const ssize_t sent = ::send(fd_, pending_.data(), pending_.size(), MSG_NOSIGNAL);
  if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
    close();
    return;
  }
  const std::size_t taken = sent > 0 ? static_cast<std::size_t>(sent) : 0;
  thread_stats_.add(thread_stats_.bytes_written, taken);
  if (taken == pending_.size()) {
    pending_.clear();
  } else {
    writing_ = true;
    sending_.swap(pending_);
    sent_ = taken;
    pending_.clear();
    if (!set_interest(interest_ | EPOLLOUT)) return;  // closed
  }
  if (measure_latency_) {
    const Clock::time_point now = Clock::now();
    thread_stats_.latency.write.record(nanoseconds(now - write_start));
    thread_stats_.latency.request.record(nanoseconds(now - read_at_));
  }
  if (!writing_ && close_after_write_) close();
}

void Connection::continue_write() {
  while (sent_ < sending_.size()) {
    const ssize_t sent =
        ::send(fd_, sending_.data() + sent_, sending_.size() - sent_, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;  // the set reports room again
      close();
      return;
    }
    sent_ += static_cast<std::size_t>(sent);
    thread_stats_.add(thread_stats_.bytes_written, static_cast<std::size_t>(sent));
  }
  if (!set_interest(interest_ & ~std::uint32_t{EPOLLOUT})) return;  // closed
  on_write();
}

void Connection::on_write() {
  writing_ = false;
  sending_.clear();
  sent_ = 0;
  if (sending_.capacity() > 4 * kOutputHighWater) sending_.shrink_to_fit();
  // Input left unparsed by back-pressure can be processed now.
  process_input();
}

bool Connection::set_interest(std::uint32_t events) {
  if (!loop_.modify(fd_, *this, events)) {
    spdlog::warn("cannot wait for a client socket: {}", std::strerror(errno));
    close();
    return false;
  }
  interest_ = events;
  return true;
}

void Connection::close() {
  if (closed_) return;
  closed_ = true;
  reading_ = false;
  if (watch_id_ != 0) executor_.context().admin.watchers.remove(watch_id_);
  if (fd_ >= 0) {
    loop_.remove(fd_);
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
  }
  manager_.remove(shared_from_this());
}

}  // namespace pmcached::server

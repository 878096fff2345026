// Connection: one client socket, its input buffer, parser, and pending replies.
//
// The connection reads into a contiguous buffer, parses and executes every complete command
// in it (memcached clients pipeline), and batches the replies of one read into a single
// write: a direct non-blocking send, with only what the socket cannot take left until it has
// room. While that write is in flight, new replies collect in a second buffer;
// once that buffer passes kOutputHighWater the connection stops parsing and reading until the
// write completes, so a client that never reads cannot make the server buffer without bound.
// The socket is not Asio's: it sits in its worker's EventLoop (a level-triggered epoll set) from
// start() to close(), and the connection receives only when the set says input is there.
// Sets (text, binary and ms) wait for the worker's group commit (set_batch.h): a pipeline's run of
// them together, with the command after the run held, parsed, until they are stored.
// The first byte a client sends picks the wire format for the connection's life, as in
// memcached: 0x80 (the binary request magic) the binary protocol, anything else text.
// With `measure_latency` it records the time of each phase of a request in its worker's
// ThreadStats (server_stats.h says which phases).
//
// Lifetime: owned by shared_ptrs captured in every pending handler and by the
// ConnectionManager (the EventLoop holds a plain pointer, removed by close()). Thread safety: a
// connection lives on one worker's EventLoop (one thread); stop() may be called from any thread
// and posts to that loop.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include "protocol/binary_parser.h"
#include "protocol/command.h"
#include "protocol/parser.h"
#include "server/command_executor.h"
#include "server/event_loop.h"

namespace pmcached::server {

// memcached's name of an endpoint in `stats conns`: "tcp:1.2.3.4:5" or "tcp6:[::1]:5".
std::string describe_endpoint(const boost::asio::ip::tcp::endpoint& endpoint);

class ConnectionManager;
class SetBatch;

class Connection final : public std::enable_shared_from_this<Connection>,
                         private EventLoop::Listener {
 public:
  // Replies pending beyond this pause parsing and reading until the socket drains.
  static constexpr std::size_t kOutputHighWater = 1u << 20;
  static constexpr std::size_t kInitialInputSize = 16u << 10;

  // `socket`: accepted (on any io_context); the connection takes its descriptor, which `loop`,
  // the worker's, waits for from start(). `set_batch`: the worker's group commit of sets
  // (nullptr: each set is stored alone).
  Connection(boost::asio::ip::tcp::socket socket, EventLoop& loop, CommandExecutor& executor,
             ThreadStats& thread_stats, ConnectionManager& manager,
             const protocol::ParserLimits& limits, bool measure_latency = false,
             SetBatch* set_batch = nullptr);

  ~Connection();

  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void start();

  // Stops reading new commands; replies to what was already received, then closes.
  void stop();

  // What `stats conns` shows of this connection (any thread).
  [[nodiscard]] ConnectionInfo info() const;

  // The oldest set this connection left in the SetBatch was stored: reply, and once its last
  // one is, parse on.
  void finish_set(const engine::StoreOutcome& outcome);

  // Sets of one connection that wait in the batch at most (a pipeline of more waits for the
  // first ones).
  static constexpr std::size_t kMaxWaitingSets = 64;

 private:
  // Wants input again (the set reports it; nothing is received here).
  void read_more();
  void on_ready(std::uint32_t events) override;
  void receive();
  void on_read(bool end_of_input, std::size_t bytes);
  void process_input();
  void execute_commands();
  // Leaves command_ in set_batch_ if it is a set that may wait there (CommandExecutor::
  // defer_set says which); false if not.
  bool defer_set(std::chrono::steady_clock::time_point execute_start);
  // Acts on a parsed command (result and command_): executes it, or queues its error reply.
  void handle(const protocol::ParseResult& result, std::chrono::steady_clock::time_point start);
  [[nodiscard]] bool awaiting_sets() const noexcept { return sets_waiting_ > 0; }
  void write_pending();
  // Sends more of sending_ once the socket takes it.
  void continue_write();
  void on_write();
  // What the set reports for the socket: EPOLLIN and/or EPOLLOUT. False if epoll refused.
  bool set_interest(std::uint32_t events);
  void make_room_for_input();
  void close();
  // `watch`: from now on the connection only carries log lines (input is read and dropped, to
  // see the client leave).
  void start_watching(std::uint16_t flags);
  void deliver_log(const std::string& line);

  [[nodiscard]] std::string_view unparsed() const noexcept {
    return {input_.data() + input_begin_, input_end_ - input_begin_};
  }

  EventLoop& loop_;  // the worker's
  CommandExecutor& executor_;
  ThreadStats& thread_stats_;
  ConnectionManager& manager_;
  protocol::Parser parser_;
  protocol::BinaryParser binary_parser_;
  enum class Wire : std::uint8_t { kUndecided, kText, kBinary };
  Wire wire_ = Wire::kUndecided;
  protocol::Command command_;
  std::size_t max_input_;
  SetBatch* set_batch_;
  // Sets that wait in set_batch_ (the first sets_waiting_ of waiting_sets_, whose later
  // elements only keep their capacity), in the order they came (a pipeline's run of them), and
  // how many of them are stored already. While any waits, nothing is received or sent (their
  // views point into input_), and the first command after them that is not such a set is held,
  // parsed, in command_ until they are all stored, so replies keep the order of the commands.
  struct WaitingSet {
    DeferredSet set;
    std::chrono::steady_clock::time_point start{};  // when it began to execute
  };
  std::vector<WaitingSet> waiting_sets_;
  std::size_t sets_waiting_ = 0;
  std::size_t sets_finished_ = 0;
  bool holding_ = false;  // command_ and held_ wait for the sets
  protocol::ParseResult held_;
  std::chrono::steady_clock::time_point held_start_{};

  std::vector<char> input_;
  std::size_t input_begin_ = 0;  // first unparsed byte
  std::size_t input_end_ = 0;    // one past the last received byte
  std::string pending_;          // replies not yet handed to the socket
  std::string sending_;          // replies of the write in flight
  std::size_t sent_ = 0;         // of sending_, handed to the socket

  using Clock = std::chrono::steady_clock;
  const bool measure_latency_;
  Clock::time_point read_at_{};  // when the latest read completed

  bool reading_ = false;        // wants input: receives when the set reports it
  std::uint32_t interest_ = 0;  // what the set watches the socket for
  bool writing_ = false;        // sending_ waits for the socket to take it
  bool input_closed_ = false;   // peer sent EOF, or stop() was called
  bool close_after_write_ = false;
  bool closed_ = false;

  // The socket; also shown by `stats conns` (kept after the close, for that).
  int fd_ = -1;
  std::string addr_;
  std::string listen_addr_;
  std::atomic<std::int64_t> last_command_at_{0};
  std::atomic<const char*> state_{"conn_waiting"};
  bool watching_ = false;
  std::uint64_t watch_id_ = 0;
};

}  // namespace pmcached::server

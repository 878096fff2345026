// Connection: one client socket, its input buffer, parser, and pending replies.
//
// The connection reads into a contiguous buffer, parses and executes every complete command
// in it (memcached clients pipeline), and batches the replies of one read into a single
// write: a direct non-blocking send, with only what the socket cannot take left to an
// asynchronous write. While that write is in flight, new replies collect in a second buffer;
// once that buffer passes kOutputHighWater the connection stops parsing and reading until the
// write completes, so a client that never reads cannot make the server buffer without bound.
// The next read starts one scheduler round after the replies went out (read_more says why).
// Sets (text, binary and ms) wait for the worker's group commit (set_batch.h): a pipeline's run of
// them together, with the command after the run held, parsed, until they are stored.
// The first byte a client sends picks the wire format for the connection's life, as in
// memcached: 0x80 (the binary request magic) the binary protocol, anything else text.
// With `measure_latency` it records the time of each phase of a request in its worker's
// ThreadStats (server_stats.h says which phases).
//
// Lifetime: owned by shared_ptrs captured in every pending handler and by the
// ConnectionManager. Thread safety: a connection lives on one worker's io_context (one
// thread); stop() may be called from any thread and posts to that context.
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

namespace pmcached::server {

// memcached's name of an endpoint in `stats conns`: "tcp:1.2.3.4:5" or "tcp6:[::1]:5".
std::string describe_endpoint(const boost::asio::ip::tcp::endpoint& endpoint);

class ConnectionManager;
class SetBatch;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // Replies pending beyond this pause parsing and reading until the socket drains.
  static constexpr std::size_t kOutputHighWater = 1u << 20;
  static constexpr std::size_t kInitialInputSize = 16u << 10;

  // `set_batch`: the worker's group commit of sets (nullptr: each set is stored alone).
  Connection(boost::asio::ip::tcp::socket socket, CommandExecutor& executor,
             ThreadStats& thread_stats, ConnectionManager& manager,
             const protocol::ParserLimits& limits, bool measure_latency = false,
             SetBatch* set_batch = nullptr);

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
  void read_more();
  void start_read();
  void on_read(const boost::system::error_code& error, std::size_t bytes);
  void process_input();
  void execute_commands();
  // Leaves command_ in set_batch_ if it is a set that may wait there (CommandExecutor::
  // defer_set says which); false if not.
  bool defer_set(std::chrono::steady_clock::time_point execute_start);
  // Acts on a parsed command (result and command_): executes it, or queues its error reply.
  void handle(const protocol::ParseResult& result, std::chrono::steady_clock::time_point start);
  [[nodiscard]] bool awaiting_sets() const noexcept { return sets_waiting_ > 0; }
  void write_pending();
  void on_write(const boost::system::error_code& error, std::size_t bytes);
  void make_room_for_input();
  void close();
  // `watch`: from now on the connection only carries log lines (input is read and dropped, to
  // see the client leave).
  void start_watching(std::uint16_t flags);
  void deliver_log(const std::string& line);

  [[nodiscard]] std::string_view unparsed() const noexcept {
    return {input_.data() + input_begin_, input_end_ - input_begin_};
  }

  boost::asio::ip::tcp::socket socket_;
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
  // how many of them are stored already. While any waits, no read starts and nothing is sent
  // (their views point into input_; a read already in flight only appends after them), and
  // the first command after them that is not such a set is held, parsed, in command_ until
  // they are all stored, so replies keep the order of the commands.
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

  using Clock = std::chrono::steady_clock;
  const bool measure_latency_;
  Clock::time_point read_at_{};  // when the latest read completed

  bool reading_ = false;
  bool read_after_sets_ = false;  // the next read follows replies to sets the batch stored
  bool writing_ = false;
  bool input_closed_ = false;  // peer sent EOF, or stop() was called
  bool close_after_write_ = false;
  bool closed_ = false;

  // For `stats conns` and log watching.
  int fd_ = -1;
  std::string addr_;
  std::string listen_addr_;
  std::atomic<std::int64_t> last_command_at_{0};
  std::atomic<const char*> state_{"conn_waiting"};
  bool watching_ = false;
  std::uint64_t watch_id_ = 0;
};

}  // namespace pmcached::server

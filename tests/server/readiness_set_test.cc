#include "server/readiness_set.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

namespace pmcached::server {
namespace {

// Two connected sockets; `ours` is the one the set watches.
class SocketPair {
 public:
  SocketPair() {
    std::array<int, 2> fds{};
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds.data()), 0);
    ours = fds[0];
    peer = fds[1];
  }
  ~SocketPair() {
    ::close(ours);
    ::close(peer);
  }
  SocketPair(const SocketPair&) = delete;
  SocketPair& operator=(const SocketPair&) = delete;

  int ours = -1;
  int peer = -1;
};

// Records what it is told; on input it receives one byte, as a connection would.
class Recorder final : public ReadinessSet::Listener {
 public:
  explicit Recorder(int fd) : fd_(fd) {}

  void on_ready(std::uint32_t events) override {
    events_.push_back(events);
    if ((events & EPOLLIN) != 0 && consume_) {
      char byte = 0;
      (void)::recv(fd_, &byte, 1, 0);
    }
  }

  std::vector<std::uint32_t> events_;
  bool consume_ = true;

 private:
  int fd_;
};

// Runs `io` until `done()` holds; false if it does not within two seconds (a set that failed
// to report would otherwise hang the test).
template <typename Done>
bool run_until(boost::asio::io_context& io, const Done& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    io.run_one_for(std::chrono::milliseconds(100));
  }
  return true;
}

// A set on its own io_context, watching `sockets.ours` for `recorder`.
class ReadinessSetTest : public ::testing::Test {
 protected:
  boost::asio::io_context io;
  ReadinessSet set{io};
  SocketPair sockets;
  Recorder recorder{sockets.ours};
};

TEST_F(ReadinessSetTest, ReportsInputOnceForEachArrivalThatIsReceived) {
  ASSERT_TRUE(set.add(sockets.ours, recorder, EPOLLIN));

  io.poll();
  EXPECT_TRUE(recorder.events_.empty()) << "nothing was sent yet";

  ASSERT_EQ(::send(sockets.peer, "x", 1, 0), 1);
  ASSERT_TRUE(run_until(io, [&] { return !recorder.events_.empty(); }));
  ASSERT_EQ(recorder.events_.size(), 1u);
  EXPECT_NE(recorder.events_[0] & EPOLLIN, 0u);

  io.poll();
  EXPECT_EQ(recorder.events_.size(), 1u) << "the byte was received: nothing is ready";
  set.remove(sockets.ours);
}

TEST_F(ReadinessSetTest, InputLeftUnreadIsReportedAgainUntilTheInterestIsNarrowed) {
  recorder.consume_ = false;
  ASSERT_TRUE(set.add(sockets.ours, recorder, EPOLLIN));
  ASSERT_EQ(::send(sockets.peer, "x", 1, 0), 1);

  // Level-triggered: each turn reports the byte nobody received.
  ASSERT_TRUE(run_until(io, [&] { return recorder.events_.size() >= 3; }));

  ASSERT_TRUE(set.modify(sockets.ours, recorder, 0));
  const std::size_t reported = recorder.events_.size();
  io.poll();
  io.poll();
  EXPECT_LE(recorder.events_.size(), reported + 1) << "at most the turn already under way";
  const std::size_t after_narrowing = recorder.events_.size();
  io.poll();
  EXPECT_EQ(recorder.events_.size(), after_narrowing);

  // Widened again, the byte still there is reported at once.
  ASSERT_TRUE(set.modify(sockets.ours, recorder, EPOLLIN));
  EXPECT_TRUE(run_until(io, [&] { return recorder.events_.size() > after_narrowing; }));
  set.remove(sockets.ours);
}

TEST_F(ReadinessSetTest, ReportsRoomToSendWhenAskedTo) {
  ASSERT_TRUE(set.add(sockets.ours, recorder, EPOLLOUT));
  ASSERT_TRUE(run_until(io, [&] { return !recorder.events_.empty(); }));
  EXPECT_NE(recorder.events_[0] & EPOLLOUT, 0u);
  set.remove(sockets.ours);
}

TEST_F(ReadinessSetTest, AnEmptySetLeavesNoWorkSoTheWorkerCanFinish) {
  SocketPair second;
  Recorder b(second.ours);
  ASSERT_TRUE(set.add(sockets.ours, recorder, EPOLLIN));
  set.remove(sockets.ours);
  io.run();  // returns: the cancelled wait was the only work
  EXPECT_TRUE(io.stopped());

  // A socket added after the set emptied is waited for again.
  io.restart();
  ASSERT_TRUE(set.add(second.ours, b, EPOLLIN));
  ASSERT_EQ(::send(second.peer, "y", 1, 0), 1);
  ASSERT_TRUE(run_until(io, [&] { return !b.events_.empty(); }));
  EXPECT_NE(b.events_[0] & EPOLLIN, 0u);
  set.remove(second.ours);
  io.run();
  EXPECT_TRUE(io.stopped());
}

TEST_F(ReadinessSetTest, RefusesADescriptorEpollCannotWatch) {
  EXPECT_FALSE(set.add(-1, recorder, EPOLLIN));
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  EXPECT_FALSE(set.add(pipe_fds[0], recorder, EPOLLIN)) << "a closed descriptor";
  io.run();  // nothing was added: no wait keeps it running
  EXPECT_TRUE(io.stopped());
}

}  // namespace
}  // namespace pmcached::server

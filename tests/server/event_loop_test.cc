#include "server/event_loop.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace pmcached::server {
namespace {

// Two connected sockets; `ours` is the one the loop watches.
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
class Recorder final : public EventLoop::Listener {
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

// Turns `loop` until `done()` holds; false if it does not within two seconds (a loop that failed
// to report would otherwise hang the test).
template <typename Done>
bool turn_until(EventLoop& loop, const Done& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    loop.run_turn(std::chrono::milliseconds(100));
  }
  return true;
}

constexpr std::chrono::milliseconds kNoWait{0};

// A loop watching `sockets.ours` for `recorder`.
class EventLoopTest : public ::testing::Test {
 protected:
  EventLoop loop;
  SocketPair sockets;
  Recorder recorder{sockets.ours};
};

TEST_F(EventLoopTest, ReportsInputOnceForEachArrivalThatIsReceived) {
  ASSERT_TRUE(loop.add(sockets.ours, recorder, EPOLLIN));
  EXPECT_EQ(loop.watched(), 1u);

  loop.run_turn(kNoWait);
  EXPECT_TRUE(recorder.events_.empty()) << "nothing was sent yet";

  ASSERT_EQ(::send(sockets.peer, "x", 1, 0), 1);
  ASSERT_TRUE(turn_until(loop, [&] { return !recorder.events_.empty(); }));
  ASSERT_EQ(recorder.events_.size(), 1u);
  EXPECT_NE(recorder.events_[0] & EPOLLIN, 0u);

  loop.run_turn(kNoWait);
  EXPECT_EQ(recorder.events_.size(), 1u) << "the byte was received: nothing is ready";
  loop.remove(sockets.ours);
  EXPECT_EQ(loop.watched(), 0u);
}

TEST_F(EventLoopTest, InputLeftUnreadIsReportedAgainUntilTheInterestIsNarrowed) {
  recorder.consume_ = false;
  ASSERT_TRUE(loop.add(sockets.ours, recorder, EPOLLIN));
  ASSERT_EQ(::send(sockets.peer, "x", 1, 0), 1);

  // Level-triggered: each turn reports the byte nobody received.
  ASSERT_TRUE(turn_until(loop, [&] { return recorder.events_.size() >= 3; }));

  ASSERT_TRUE(loop.modify(sockets.ours, recorder, 0));
  const std::size_t reported = recorder.events_.size();
  loop.run_turn(kNoWait);
  loop.run_turn(kNoWait);
  EXPECT_EQ(recorder.events_.size(), reported) << "narrowed: the unread byte is not reported";

  // Widened again, the byte still there is reported at once.
  ASSERT_TRUE(loop.modify(sockets.ours, recorder, EPOLLIN));
  loop.run_turn(kNoWait);
  EXPECT_EQ(recorder.events_.size(), reported + 1);
  loop.remove(sockets.ours);
}

TEST_F(EventLoopTest, ReportsRoomToSendWhenAskedTo) {
  ASSERT_TRUE(loop.add(sockets.ours, recorder, EPOLLOUT));
  ASSERT_TRUE(turn_until(loop, [&] { return !recorder.events_.empty(); }));
  EXPECT_NE(recorder.events_[0] & EPOLLOUT, 0u);
  loop.remove(sockets.ours);
}

TEST_F(EventLoopTest, HandlersPostedByItsOwnThreadRunBeforeTheNextWait) {
  ASSERT_TRUE(loop.add(sockets.ours, recorder, EPOLLIN));
  bool ran = false;
  boost::asio::post(loop.io(), [&] { ran = true; });
  // No socket is ready and nothing wakes the loop: the handler runs without a wait.
  loop.run_turn(kNoWait);
  EXPECT_TRUE(ran);
  loop.remove(sockets.ours);
}

TEST_F(EventLoopTest, APostFromAnotherThreadWakesAWaitingLoop) {
  ASSERT_TRUE(loop.add(sockets.ours, recorder, EPOLLIN));
  std::atomic<bool> ran{false};
  std::thread poster([&] { loop.post([&] { ran = true; }); });
  // No socket becomes ready: only the post can end this turn's wait before its minute is up.
  const auto start = std::chrono::steady_clock::now();
  loop.run_turn(std::chrono::minutes(1));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  poster.join();
  loop.run_turn(kNoWait);
  EXPECT_TRUE(ran);
  loop.remove(sockets.ours);
}

TEST_F(EventLoopTest, RunReturnsOnceADrainedLoopWatchesNothing) {
  ASSERT_TRUE(loop.add(sockets.ours, recorder, EPOLLIN));
  std::thread runner([&] { loop.run(); });
  // What a connection's stop does: posted to the loop, it removes the socket.
  loop.post([&] { loop.remove(sockets.ours); });
  loop.drain();
  runner.join();  // hangs (and the test times out) if run() does not return
  EXPECT_EQ(loop.watched(), 0u);
}

TEST_F(EventLoopTest, ADrainedLoopRunsWhatWasPostedBeforeTheDrain) {
  // A connection's start and stop, posted before the shutdown began: both run.
  bool started = false;
  bool stopped = false;
  loop.post([&] { started = loop.add(sockets.ours, recorder, EPOLLIN); });
  loop.post([&] {
    loop.remove(sockets.ours);
    stopped = true;
  });
  loop.drain();
  loop.run();
  EXPECT_TRUE(started);
  EXPECT_TRUE(stopped);
}

TEST_F(EventLoopTest, StopEndsRunWithSocketsStillWatched) {
  ASSERT_TRUE(loop.add(sockets.ours, recorder, EPOLLIN));
  std::thread runner([&] { loop.run(); });
  loop.stop();
  runner.join();
  EXPECT_EQ(loop.watched(), 1u);
  loop.remove(sockets.ours);
}

TEST_F(EventLoopTest, RefusesADescriptorEpollCannotWatch) {
  EXPECT_FALSE(loop.add(-1, recorder, EPOLLIN));
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  EXPECT_FALSE(loop.add(pipe_fds[0], recorder, EPOLLIN)) << "a closed descriptor";
  EXPECT_EQ(loop.watched(), 0u);
}

}  // namespace
}  // namespace pmcached::server

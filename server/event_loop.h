// EventLoop: one worker thread's loop. Its client sockets wait in a level-triggered epoll set,
// as memcached's libevent loop keeps them, and the thread blocks in that set's epoll_wait and
// nowhere else; handlers posted to the worker run between its turns.
//
// Why not Asio's own socket waits: Boost 1.74's reactor is edge-triggered, so every
// async_read_some first tries a receive (it cannot tell whether an earlier edge left data
// behind), and every async_wait re-arms the descriptor with an epoll_ctl. Under memcaslap that
// made 1.9 receives per request where memcached makes one (issue 16, docs/TAIL_LATENCY.md). Here
// a socket stays registered from its first read to its close and a connection receives only
// when the set says it has input. And why not wait for the set through Asio (stop 48 did): each
// turn then cost Asio's epoll_wait, the set's own and Asio's re-arm of the set; now it costs one
// epoll_wait. The io_context that runs posted handlers owns no descriptor, so running them
// (io_context::poll) makes no system call; a post from another thread wakes the loop through an
// eventfd in the set.
//
// A listener whose socket is ready but that does not want the event now (a connection whose sets
// wait in the batch, or that is held back by its unsent replies) narrows its interest with
// modify(), so that a level-triggered readiness does not wake the worker again and again.
//
// Thread safety: post(), drain() and stop() from any thread; everything else on the loop's
// thread (the one in run()).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <utility>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

namespace pmcached::server {

class EventLoop {
 public:
  class Listener {
   public:
    // `events`: the epoll events of the listener's socket (EPOLLIN, EPOLLOUT, EPOLLERR,
    // EPOLLHUP). May remove the listener itself, and no other.
    virtual void on_ready(std::uint32_t events) = 0;

   protected:
    ~Listener() = default;
  };

  // Throws boost::system::system_error if no epoll instance or eventfd can be made.
  EventLoop();
  ~EventLoop();

  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Runs `handler` on the loop's thread before its next wait. Any thread.
  template <typename Handler>
  void post(Handler&& handler) {
    boost::asio::post(io_, std::forward<Handler>(handler));
    wake();
  }

  // For handlers the loop's own thread posts while it handles a turn's sockets: they run when
  // the turn's sockets have been handled, before the loop waits again (no wake-up needed).
  [[nodiscard]] boost::asio::io_context& io() noexcept { return io_; }

  // Watches `fd` for `events` (EPOLLIN and/or EPOLLOUT; EPOLLERR and EPOLLHUP always), reported
  // to `listener` until remove(fd). False if epoll refused (errno says why).
  [[nodiscard]] bool add(int fd, Listener& listener, std::uint32_t events) noexcept;
  // Changes what `fd` is watched for.
  [[nodiscard]] bool modify(int fd, Listener& listener, std::uint32_t events) noexcept;
  // Stops watching `fd`; call before closing it.
  void remove(int fd) noexcept;
  [[nodiscard]] std::size_t watched() const noexcept { return watched_; }

  // Turns until stop(), or until drain() was called and no socket is watched any more.
  void run();
  // One turn: runs the posted handlers, then waits up to `timeout` (negative: without limit)
  // for ready sockets or a post and handles the sockets. Returns the handlers and sockets handled.
  std::size_t run_turn(std::chrono::milliseconds timeout);

  // run() returns once the last watched socket is removed. Any thread.
  void drain() noexcept;
  // run() returns after the turn under way; what is still posted is not run. Any thread.
  void stop() noexcept;

 private:
  void wake() noexcept;

  int epoll_fd_ = -1;
  int wake_fd_ = -1;               // eventfd in the set: a post or stop from another thread
  boost::asio::io_context io_{1};  // one thread runs it
  // Keeps io_.poll() from stopping io_ when it finds nothing to do.
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{
      boost::asio::make_work_guard(io_)};
  std::size_t watched_ = 0;
  std::atomic<bool> draining_{false};
  std::atomic<bool> stopped_{false};
};

}  // namespace pmcached::server

#include "server/event_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>

#include <boost/system/system_error.hpp>

namespace pmcached::server {

namespace {

// Ready sockets handled per turn; more stay ready (level-triggered) for the next turn.
constexpr int kEventsPerTurn = 64;

[[noreturn]] void fail(const char* what) {
  throw boost::system::system_error(errno, boost::system::system_category(), what);
}

}  // namespace

EventLoop::EventLoop() {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) fail("epoll_create1");
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    ::close(epoll_fd_);
    fail("eventfd");
  }
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.ptr = nullptr;  // no listener: the wake-up
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &event) != 0) {
    ::close(wake_fd_);
    ::close(epoll_fd_);
    fail("epoll_ctl");
  }
}

EventLoop::~EventLoop() {
  ::close(wake_fd_);
  ::close(epoll_fd_);
}

bool EventLoop::add(int fd, Listener& listener, std::uint32_t events) noexcept {
  epoll_event event{};
  event.events = events;
  event.data.ptr = &listener;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) return false;
  ++watched_;
  return true;
}

bool EventLoop::modify(int fd, Listener& listener, std::uint32_t events) noexcept {
  epoll_event event{};
  event.events = events;
  event.data.ptr = &listener;
  return ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &event) == 0;
}

void EventLoop::remove(int fd) noexcept {
  epoll_event ignored{};
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, &ignored) == 0) --watched_;
}

void EventLoop::run() {
  for (;;) {
    // Read before the handlers run: whatever was posted before drain() is run first.
    const bool draining = draining_.load(std::memory_order_acquire);
    if (draining && watched_ == 0) {
      if (io_.poll() == 0) return;
      continue;  // the handlers may have added sockets
    }
    run_turn(std::chrono::milliseconds(-1));
    if (stopped_.load(std::memory_order_acquire)) return;
  }
}

std::size_t EventLoop::run_turn(std::chrono::milliseconds timeout) {
  std::size_t handled = io_.poll();
  if (stopped_.load(std::memory_order_acquire)) return handled;
  // A drain() while this thread waits must wake it, as a post does; so must the handlers above
  // if they emptied the set of a draining loop.
  if (draining_.load(std::memory_order_acquire) && watched_ == 0) return handled;
  std::array<epoll_event, kEventsPerTurn> events;  // epoll_wait fills them: not zeroed each turn
  const int count = ::epoll_wait(epoll_fd_, events.data(), kEventsPerTurn,
                                 timeout.count() < 0 ? -1 : static_cast<int>(timeout.count()));
  for (int i = 0; i < count; ++i) {
    if (events[i].data.ptr == nullptr) {
      std::uint64_t posts = 0;
      (void)::read(wake_fd_, &posts, sizeof posts);  // resets the eventfd
      continue;
    }
    static_cast<Listener*>(events[i].data.ptr)->on_ready(events[i].events);
    ++handled;
  }
  return handled;
}

void EventLoop::drain() noexcept {
  draining_.store(true, std::memory_order_release);
  wake();
}

void EventLoop::stop() noexcept {
  stopped_.store(true, std::memory_order_release);
  io_.stop();
  wake();
}

void EventLoop::wake() noexcept {
  const std::uint64_t one = 1;
  (void)::write(wake_fd_, &one, sizeof one);
}

}  // namespace pmcached::server

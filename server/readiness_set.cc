#include "server/readiness_set.h"

#include <sys/epoll.h>

#include <array>
#include <cerrno>

#include <boost/system/system_error.hpp>
#include <spdlog/spdlog.h>

namespace pmcached::server {

namespace {

// Ready sockets handled per turn; more stay ready (level-triggered) for the next turn.
constexpr int kEventsPerTurn = 64;

int make_epoll() {
  const int fd = ::epoll_create1(EPOLL_CLOEXEC);
  if (fd < 0) {
    throw boost::system::system_error(errno, boost::system::system_category(), "epoll_create1");
  }
  return fd;
}

}  // namespace

ReadinessSet::ReadinessSet(boost::asio::io_context& io) : epoll_(io, make_epoll()) {}

bool ReadinessSet::add(int fd, Listener& listener, std::uint32_t events) noexcept {
  epoll_event event{};
  event.events = events;
  event.data.ptr = &listener;
  if (::epoll_ctl(epoll_.native_handle(), EPOLL_CTL_ADD, fd, &event) != 0) return false;
  ++watched_;
  if (!waiting_) wait();
  return true;
}

bool ReadinessSet::modify(int fd, Listener& listener, std::uint32_t events) noexcept {
  epoll_event event{};
  event.events = events;
  event.data.ptr = &listener;
  return ::epoll_ctl(epoll_.native_handle(), EPOLL_CTL_MOD, fd, &event) == 0;
}

void ReadinessSet::remove(int fd) noexcept {
  epoll_event ignored{};
  if (::epoll_ctl(epoll_.native_handle(), EPOLL_CTL_DEL, fd, &ignored) != 0) return;
  // With nothing left to watch, no wait keeps the worker's io_context running (a shutdown waits
  // for the workers to run out of work).
  if (--watched_ == 0 && waiting_) {
    boost::system::error_code ignored_error;
    epoll_.cancel(ignored_error);
  }
}

void ReadinessSet::wait() {
  waiting_ = true;
  // Asio re-arms the descriptor for the wait (EPOLL_CTL_MOD), which reports the set at once if a
  // socket in it is still ready.
  epoll_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                    [this](const boost::system::error_code& error) { on_readable(error); });
}

void ReadinessSet::on_readable(const boost::system::error_code& error) {
  waiting_ = false;
  if (!error) {
    std::array<epoll_event, kEventsPerTurn> events;  // epoll_wait fills them: not zeroed each turn
    const int count = ::epoll_wait(epoll_.native_handle(), events.data(), kEventsPerTurn, 0);
    for (int i = 0; i < count; ++i) {
      static_cast<Listener*>(events[i].data.ptr)->on_ready(events[i].events);
    }
  } else if (error != boost::asio::error::operation_aborted) {
    // The set's own descriptor failed: its sockets can no longer be waited for.
    spdlog::error("waiting for client sockets failed: {}", error.message());
    return;
  }
  // Cancelled by remove() when the set emptied; a socket added since needs the wait.
  if (watched_ > 0 && !waiting_) wait();
}

}  // namespace pmcached::server

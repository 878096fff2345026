// ReadinessSet: one worker's client sockets in a level-triggered epoll set of their own, which
// the worker's io_context waits for as a single descriptor.
//
// Why not Asio's own socket waits: Boost 1.74's reactor is edge-triggered, so every
// async_read_some first tries a receive (it cannot tell whether an earlier edge left data
// behind), and every async_wait re-arms the descriptor with an epoll_ctl. Under memcaslap that
// made 1.9 receives per request where memcached, whose libevent loop keeps its descriptors
// level-triggered, makes one (issue 16, docs/TAIL_LATENCY.md). Here a socket stays registered
// from its first read to its close, a connection receives only when the set says it has input,
// and the worker pays one epoll_wait and one re-arm per turn, for all its ready sockets.
//
// A listener whose socket is ready but that does not want the event now (a connection whose sets
// wait in the batch, or that is held back by its unsent replies) narrows its interest with
// modify(), so that a level-triggered readiness does not wake the worker again and again.
//
// Thread safety: one per worker, used on that worker's thread only.
#pragma once

#include <cstdint>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

namespace pmcached::server {

class ReadinessSet {
 public:
  class Listener {
   public:
    // `events`: the epoll events of the listener's socket (EPOLLIN, EPOLLOUT, EPOLLERR,
    // EPOLLHUP). May remove the listener itself, and no other.
    virtual void on_ready(std::uint32_t events) = 0;

   protected:
    ~Listener() = default;
  };

  // Throws boost::system::system_error if no epoll instance can be made.
  explicit ReadinessSet(boost::asio::io_context& io);

  ReadinessSet(const ReadinessSet&) = delete;
  ReadinessSet& operator=(const ReadinessSet&) = delete;

  // Watches `fd` for `events` (EPOLLIN and/or EPOLLOUT; EPOLLERR and EPOLLHUP always), reported
  // to `listener` until remove(fd). False if epoll refused (errno says why).
  [[nodiscard]] bool add(int fd, Listener& listener, std::uint32_t events) noexcept;
  // Changes what `fd` is watched for.
  [[nodiscard]] bool modify(int fd, Listener& listener, std::uint32_t events) noexcept;
  // Stops watching `fd`; call before closing it.
  void remove(int fd) noexcept;

 private:
  void wait();
  void on_readable(const boost::system::error_code& error);

  boost::asio::posix::stream_descriptor epoll_;
  std::size_t watched_ = 0;
  bool waiting_ = false;  // an async_wait on epoll_ is pending
};

}  // namespace pmcached::server

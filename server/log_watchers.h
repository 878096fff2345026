// LogWatchers: memcached's log watchers (`watch fetchers mutations ...`).
//
// A connection that sends `watch` becomes a watcher: it registers a sink and the event kinds it
// wants, and from then on receives one line per event, in memcached's format:
//   ts=<secs>.<usecs> gid=<n> type=item_get key=<k> status=found|not_found clsid=<c> cfd=<fd>
//   size=<n> ts=... gid=... type=item_store key=<k>
//   status=stored|not_stored|exists|not_found|too_large|no_memory
//       cmd=set|add|replace|append|prepend|cas ttl=<s> clsid=<c> cfd=<fd> size=<n>
// Keys are URL-encoded as memcached does. Events are produced only while someone watches that
// kind (wants() is one relaxed load otherwise).
//
// Thread safety: every method may be called from any thread. Sinks are called with the
// watcher list's mutex held: they must only hand the line on (post it), never call back.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace pmcached::server {

class LogWatchers {
 public:
  // Takes one line; false once the watcher is gone (it is then dropped).
  using Sink = std::function<bool(const std::shared_ptr<const std::string>& line)>;

  [[nodiscard]] std::uint64_t add(std::uint16_t flags, Sink sink);
  void remove(std::uint64_t id);

  // True if a watcher wants events of `flag` (a protocol::WatchFlag).
  [[nodiscard]] bool wants(std::uint16_t flag) const noexcept {
    return (active_.load(std::memory_order_relaxed) & flag) != 0;
  }

  // Sends `body` (the line after "ts=... gid=... ", without its "\n") to the watchers of `flag`.
  void publish(std::uint16_t flag, std::string_view body);

  [[nodiscard]] std::size_t count() const;

 private:
  struct Watcher {
    std::uint64_t id;
    std::uint16_t flags;
    Sink sink;
  };
  void update_active();  // mutex held

  mutable std::mutex mutex_;
  std::vector<Watcher> watchers_;
  std::uint64_t next_id_ = 1;
  std::atomic<std::uint16_t> active_{0};
  std::atomic<std::uint64_t> gid_{0};
};

// memcached's URL encoding of keys in log lines and metadump (uriencode: [A-Za-z0-9.~_-] kept).
void append_uri_encoded(std::string& out, std::string_view key);

}  // namespace pmcached::server

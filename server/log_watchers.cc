#include "server/log_watchers.h"

#include <sys/time.h>

#include <algorithm>
#include <cstdio>

namespace pmcached::server {

std::uint64_t LogWatchers::add(std::uint16_t flags, Sink sink) {
  std::lock_guard lock(mutex_);
  const std::uint64_t id = next_id_++;
  watchers_.push_back({id, flags, std::move(sink)});
  update_active();
  return id;
}

void LogWatchers::remove(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  std::erase_if(watchers_, [id](const Watcher& w) { return w.id == id; });
  update_active();
}

std::size_t LogWatchers::count() const {
  std::lock_guard lock(mutex_);
  return watchers_.size();
}

void LogWatchers::update_active() {
  std::uint16_t flags = 0;
  for (const Watcher& w : watchers_) flags |= w.flags;
  active_.store(flags, std::memory_order_relaxed);
}

void LogWatchers::publish(std::uint16_t flag, std::string_view body) {
  timeval now{};
  gettimeofday(&now, nullptr);
  char head[64];
  // memcached 1.6.18 prints the microseconds unpadded ("ts=%d.%d"): 0.040487 s shows as ".40487".
  const int n = std::snprintf(
      head, sizeof head, "ts=%lld.%ld gid=%llu ", static_cast<long long>(now.tv_sec),
      static_cast<long>(now.tv_usec),
      static_cast<unsigned long long>(gid_.fetch_add(1, std::memory_order_relaxed) + 1));
  auto line = std::make_shared<std::string>(head, static_cast<std::size_t>(n));
  line->append(body).push_back('\n');
  std::lock_guard lock(mutex_);
  const std::size_t before = watchers_.size();
  std::erase_if(watchers_,
                [&](const Watcher& w) { return (w.flags & flag) != 0 && !w.sink(line); });
  if (watchers_.size() != before) update_active();
}

void append_uri_encoded(std::string& out, std::string_view key) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (const char ch : key) {
    const auto c = static_cast<unsigned char>(ch);
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '.' || c == '~' || c == '_' || c == '-';
    if (plain) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
}

}  // namespace pmcached::server

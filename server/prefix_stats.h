// PrefixStats: memcached's `stats detail` counters, per key prefix (the key up to its first ':').
//
// Recording is off until `stats detail on`; keys without the delimiter are not counted (as in
// memcached). `stats detail dump` lists one line per prefix, in prefix order (memcached's order
// is that of its hash table).
//
// Thread safety: every method may be called from any thread (one mutex; only taken while
// recording is on).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace pmcached::server {

class PrefixStats {
 public:
  static constexpr char kDelimiter = ':';

  void set_enabled(bool on) noexcept { enabled_.store(on, std::memory_order_relaxed); }
  [[nodiscard]] bool enabled() const noexcept { return enabled_.load(std::memory_order_relaxed); }

  void record_get(std::string_view key, bool hit);
  void record_set(std::string_view key);
  void record_delete(std::string_view key);

  // "PREFIX <p> get <n> hit <n> set <n> del <n>\r\n" per prefix, then "END\r\n".
  void dump(std::string& out) const;
  void clear();

 private:
  struct Counts {
    std::uint64_t get = 0, hit = 0, set = 0, del = 0;
  };
  // The counts of `key`'s prefix (created), or nullptr if `key` has no prefix. Mutex held.
  Counts* find(std::string_view key);

  std::atomic<bool> enabled_{false};
  mutable std::mutex mutex_;
  std::map<std::string, Counts, std::less<>> prefixes_;
};

}  // namespace pmcached::server

// Expiry and flush_all rules, as memcached 1.6 applies them.
//
// Client exptimes follow memcached's realtime(): 0 = never; negative = already expired; up to
// 30 days = relative to now; larger = absolute Unix time. An item is expired when
// exptime != 0 && exptime <= now.
//
// flush_all follows memcached's oldest_live/oldest_cas rule: an item is flushed once
// now >= oldest_live and either it was last updated at or before oldest_live, or (for an
// immediate flush) its cas is below the cas taken at the flush, so that sets made after the
// flush in the same second survive.
//
// Thread safety: FlushState may be read and written from any thread (atomics).
#pragma once

#include <atomic>
#include <cstdint>

namespace pmcached::engine {

inline constexpr std::int64_t kMaxRelativeExptime = 60 * 60 * 24 * 30;

// An absolute time that is always in the past for a running server.
inline constexpr std::int64_t kExpiredLongAgo = 1;

[[nodiscard]] constexpr std::int64_t to_absolute_exptime(std::int64_t client_exptime,
                                                         std::int64_t now) noexcept {
  if (client_exptime == 0) return 0;
  if (client_exptime < 0) return kExpiredLongAgo;
  if (client_exptime > kMaxRelativeExptime) return client_exptime;
  return now + client_exptime;
}

[[nodiscard]] constexpr bool is_expired(std::int64_t exptime, std::int64_t now) noexcept {
  return exptime != 0 && exptime <= now;
}

class FlushState {
 public:
  // Records a flush_all. `oldest_live` is the last update time that dies; `oldest_cas`
  // (0 = keep the previous one) is the first cas that survives.
  void flush(std::int64_t oldest_live, std::uint64_t oldest_cas) noexcept {
    if (oldest_cas != 0) oldest_cas_.store(oldest_cas, std::memory_order_relaxed);
    oldest_live_.store(oldest_live, std::memory_order_release);
  }

  [[nodiscard]] bool is_flushed(std::int64_t last_update, std::uint64_t cas,
                                std::int64_t now) const noexcept {
    const std::int64_t oldest_live = oldest_live_.load(std::memory_order_acquire);
    if (oldest_live == 0 || oldest_live > now) return false;
    const std::uint64_t oldest_cas = oldest_cas_.load(std::memory_order_relaxed);
    return last_update <= oldest_live || (oldest_cas != 0 && cas != 0 && cas < oldest_cas);
  }

  [[nodiscard]] std::int64_t oldest_live() const noexcept { return oldest_live_.load(); }
  [[nodiscard]] std::uint64_t oldest_cas() const noexcept { return oldest_cas_.load(); }

 private:
  std::atomic<std::int64_t> oldest_live_{0};
  std::atomic<std::uint64_t> oldest_cas_{0};
};

}  // namespace pmcached::engine

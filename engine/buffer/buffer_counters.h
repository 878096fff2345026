// BufferCounters: the buffer manager's event counters, striped so that concurrent fixes on
// different cores do not bounce one cache line (each thread adds to its own stripe; reading
// sums the stripes).
//
// Thread safety: add() from any thread; sum() from any thread (a sum is not a snapshot across
// counters, only each counter is exact once the adding threads are done).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace pmcached::buffer {

enum class BufferEvent : std::uint8_t {
  kHits,
  kMisses,
  kEvictions,
  kWriteBacks,
  kSwizzles,
  kUnswizzles,
  kHashProbes,
  kSwizzledFixes,
  kFixRetries,
  kCount
};

class BufferCounters {
 public:
  void add(BufferEvent event, std::uint64_t n = 1) noexcept {
    stripes_[stripe()].counts[static_cast<std::size_t>(event)].fetch_add(n,
                                                                         std::memory_order_relaxed);
  }

  [[nodiscard]] std::uint64_t sum(BufferEvent event) const noexcept {
    std::uint64_t total = 0;
    for (const Stripe& s : stripes_) {
      total += s.counts[static_cast<std::size_t>(event)].load(std::memory_order_relaxed);
    }
    return total;
  }

 private:
  static constexpr std::size_t kStripes = 8;
  struct alignas(64) Stripe {
    std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(BufferEvent::kCount)> counts{};
  };

  // Threads take stripes in turn, so the first kStripes threads never share one.
  static std::size_t stripe() noexcept {
    static std::atomic<std::size_t> next{0};
    thread_local const std::size_t mine = next.fetch_add(1, std::memory_order_relaxed) % kStripes;
    return mine;
  }

  std::array<Stripe, kStripes> stripes_{};
};

}  // namespace pmcached::buffer

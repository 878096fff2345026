// BufferCounters: the buffer manager's event counters, striped so that concurrent fixes on
// different cores do not bounce one cache line (each thread adds to its own stripe; reading
// sums the stripes).
//
// The first kOwnedStripes threads own a stripe each and add with a plain load and store: a
// locked add on every fix is a full fence on x86, which holds back the loads of the page
// being searched. Later threads share the last stripe and add atomically.
//
// Thread safety: add() from any thread; sum() from any thread (a sum is not a snapshot across
// counters, only each counter is exact once the adding threads are done).
#pragma once

#include <algorithm>
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
    const std::size_t s = stripe();
    std::atomic<std::uint64_t>& count = stripes_[s].counts[static_cast<std::size_t>(event)];
    if (s < kOwnedStripes) {
      count.store(count.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    } else {
      count.fetch_add(n, std::memory_order_relaxed);
    }
  }

  [[nodiscard]] std::uint64_t sum(BufferEvent event) const noexcept {
    std::uint64_t total = 0;
    for (const Stripe& s : stripes_) {
      total += s.counts[static_cast<std::size_t>(event)].load(std::memory_order_relaxed);
    }
    return total;
  }

 private:
  static constexpr std::size_t kOwnedStripes = 8;
  static constexpr std::size_t kStripes = kOwnedStripes + 1;  // the last one shared
  struct alignas(64) Stripe {
    std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(BufferEvent::kCount)> counts{};
  };

  // A thread's stripe, taken on its first add: the first kOwnedStripes threads of the process
  // get one each, for good; every later thread the shared one.
  static std::size_t stripe() noexcept {
    static std::atomic<std::size_t> next{0};
    thread_local const std::size_t mine =
        std::min(next.fetch_add(1, std::memory_order_relaxed), kOwnedStripes);
    return mine;
  }

  std::array<Stripe, kStripes> stripes_{};
};

}  // namespace pmcached::buffer

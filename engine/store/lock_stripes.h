// LockStripes: the store's per-key mutual exclusion and its sharded counters.
//
// A key's stripe is chosen by XXH3_64bits of the key. Every store operation on a key holds that
// stripe's mutex for its whole read-modify-write, which makes commands atomic per key and keeps
// item records alive while a visitor reads them. Each stripe also carries the statistics counters
// of the operations done under it, so counting costs no shared cache line.
//
// Thread safety: counters are relaxed atomics; add() is a load+store, so it must only be called
// while holding the stripe's mutex (the only writer). Reads (value()) are allowed from any
// thread without the mutex. Never hold two stripe mutexes at once, but in Store's group commit
// (store_batch.cc), which takes several in address order: with every other thread holding at
// most one (or only trying a second: evacuate_for), nobody can wait for it in a cycle.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>

#include <xxhash.h>

namespace pmcached::engine {

// Counters kept per stripe; names follow memcached's `stats`.
enum class Counter : std::uint8_t {
  kCurrItems,  // not reset by `stats reset`
  kTotalItems,
  kEvictions,
  kExpiredUnfetched,
  kEvictedUnfetched,
  kReclaimed,
  kGetHits,
  kGetMisses,
  kGetExpired,
  kGetFlushed,
  kCmdGet,
  kCmdSet,
  kCmdTouch,
  kTouchHits,
  kTouchMisses,
  kDeleteHits,
  kDeleteMisses,
  kIncrHits,
  kIncrMisses,
  kDecrHits,
  kDecrMisses,
  kCasHits,
  kCasMisses,
  kCasBadval,
  kCount,
};
inline constexpr std::size_t kCounterCount = static_cast<std::size_t>(Counter::kCount);

struct alignas(64) Stripe {
  std::mutex mutex;
  std::array<std::atomic<std::uint64_t>, kCounterCount> counters{};

  // Caller holds `mutex`.
  void add(Counter c, std::uint64_t n = 1) noexcept {
    auto& a = counters[static_cast<std::size_t>(c)];
    a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  // Caller holds `mutex`.
  void sub(Counter c, std::uint64_t n = 1) noexcept {
    auto& a = counters[static_cast<std::size_t>(c)];
    a.store(a.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint64_t value(Counter c) const noexcept {
    return counters[static_cast<std::size_t>(c)].load(std::memory_order_relaxed);
  }
};

class LockStripes {
 public:
  // `count` is rounded up to a power of two (at least 1).
  explicit LockStripes(std::size_t count)
      : count_(std::bit_ceil(count == 0 ? std::size_t{1} : count)),
        stripes_(std::make_unique<Stripe[]>(count_)) {}

  [[nodiscard]] Stripe& for_key(std::string_view key) noexcept {
    return stripes_[XXH3_64bits(key.data(), key.size()) & (count_ - 1)];
  }
  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  [[nodiscard]] Stripe& at(std::size_t i) noexcept { return stripes_[i]; }
  [[nodiscard]] const Stripe& at(std::size_t i) const noexcept { return stripes_[i]; }

  // Sum of one counter over all stripes (a relaxed snapshot).
  [[nodiscard]] std::uint64_t total(Counter c) const noexcept {
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < count_; ++i) sum += stripes_[i].value(c);
    return sum;
  }

 private:
  std::size_t count_;
  std::unique_ptr<Stripe[]> stripes_;
};

}  // namespace pmcached::engine

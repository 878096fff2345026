// ClassCounters: the store's per-size-class statistics for `stats slabs` and `stats items`
// (memcached's names: get_hits, cmd_set, ..., evicted, reclaimed, outofmemory).
//
// Cheap on the hot path: relaxed atomic adds, no lock, and each thread adds into one of
// kShards copies (threads are spread over them round-robin), so two threads rarely share a cache
// line. A read sums the shards: a relaxed snapshot, like every other store counter.
//
// Thread safety: add(), set_evicted_time() and the readers may be called from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace pmcached::engine {

enum class ClassCounter : std::uint8_t {
  kGetHits,
  kCmdSet,
  kDeleteHits,
  kIncrHits,
  kDecrHits,
  kCasHits,
  kCasBadval,
  kTouchHits,
  kEvicted,
  kEvictedNonzero,  // evicted with an expiry time set
  kOutOfMemory,
  kReclaimed,
  kExpiredUnfetched,
  kEvictedUnfetched,
  kCount,
};
inline constexpr std::size_t kClassCounterCount = static_cast<std::size_t>(ClassCounter::kCount);

class ClassCounters {
 public:
  static constexpr std::size_t kShards = 8;

  explicit ClassCounters(std::size_t classes)
      : classes_(classes),
        cells_(std::make_unique<Cell[]>(classes * kShards)),
        evicted_time_(std::make_unique<std::atomic<std::int64_t>[]>(classes)) {}

  void add(std::size_t size_class, ClassCounter c) noexcept {
    cells_[shard() * classes_ + size_class][static_cast<std::size_t>(c)].fetch_add(
        1, std::memory_order_relaxed);
  }
  // memcached's evicted_time: seconds since the last access of the class's latest eviction.
  void set_evicted_time(std::size_t size_class, std::int64_t seconds) noexcept {
    evicted_time_[size_class].store(seconds, std::memory_order_relaxed);
  }

  [[nodiscard]] std::uint64_t total(std::size_t size_class, ClassCounter c) const noexcept {
    std::uint64_t sum = 0;
    for (std::size_t s = 0; s < kShards; ++s) {
      sum += cells_[s * classes_ + size_class][static_cast<std::size_t>(c)].load(
          std::memory_order_relaxed);
    }
    return sum;
  }
  [[nodiscard]] std::int64_t evicted_time(std::size_t size_class) const noexcept {
    return evicted_time_[size_class].load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::size_t classes() const noexcept { return classes_; }

  // `stats reset`.
  void reset() noexcept {
    for (std::size_t i = 0; i < classes_ * kShards; ++i) {
      for (auto& a : cells_[i]) a.store(0, std::memory_order_relaxed);
    }
    for (std::size_t i = 0; i < classes_; ++i) evicted_time_[i].store(0, std::memory_order_relaxed);
  }

 private:
  struct alignas(64) Cell : std::array<std::atomic<std::uint64_t>, kClassCounterCount> {};

  static std::size_t shard() noexcept {
    static std::atomic<std::size_t> next{0};
    thread_local const std::size_t mine = next.fetch_add(1, std::memory_order_relaxed) % kShards;
    return mine;
  }

  std::size_t classes_;
  std::unique_ptr<Cell[]> cells_;
  std::unique_ptr<std::atomic<std::int64_t>[]> evicted_time_;
};

}  // namespace pmcached::engine

// LlcCounter: last-level-cache misses of the calling thread, from the kernel's perf events
// (PERF_COUNT_HW_CACHE_MISSES). Many virtual machines expose no hardware counters; then
// available() is false and the benchmarks print "n/a" instead of a number.
//
// Thread safety: one counter per thread; not shared.
#pragma once

#include <cstdint>
#include <optional>

namespace pmcached::bench {

class LlcCounter {
 public:
  LlcCounter();
  ~LlcCounter();
  LlcCounter(const LlcCounter&) = delete;
  LlcCounter& operator=(const LlcCounter&) = delete;

  [[nodiscard]] bool available() const noexcept { return fd_ >= 0; }
  void start() noexcept;
  // Misses since start(), or nullopt when the machine has no counter.
  [[nodiscard]] std::optional<std::uint64_t> stop() noexcept;

 private:
  int fd_ = -1;
};

}  // namespace pmcached::bench

// Clock: the store's source of time, injectable so expiry is testable without sleeping.
//
// Times are whole seconds since the Unix epoch, as memcached's absolute exptimes are.
// Thread safety: now() may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace pmcached::engine {

class Clock {
 public:
  virtual ~Clock() = default;
  [[nodiscard]] virtual std::int64_t now() const noexcept = 0;
};

// Wall-clock time.
class SystemClock final : public Clock {
 public:
  [[nodiscard]] std::int64_t now() const noexcept override;
};

// A clock that only moves when told to; for tests.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(std::int64_t start = 1'700'000'000) : now_(start) {}
  [[nodiscard]] std::int64_t now() const noexcept override { return now_.load(); }
  void advance(std::int64_t seconds) noexcept { now_.fetch_add(seconds); }
  void set(std::int64_t t) noexcept { now_.store(t); }

 private:
  std::atomic<std::int64_t> now_;
};

}  // namespace pmcached::engine

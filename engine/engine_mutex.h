// EngineMutex: the reader-writer lock of an index engine — a std::shared_mutex that first spins
// briefly on try_lock before it blocks. An engine holds its lock for a microsecond or two (a
// descent and a few persists), far less than what a blocked thread costs: glibc's rwlock puts a
// contended thread to sleep on a futex at once, and the sleep plus the wake-up syscall of the
// holder cost several microseconds of CPU (measured: ~10% of the server's CPU on a SET-only load
// with two worker threads). The spin is bounded, so a holder that was preempted still lets the
// waiter block.
//
// Thread safety: a mutex; meets Lockable and SharedLockable, for std::unique_lock and
// std::shared_lock.
#pragma once

#include <immintrin.h>

#include <shared_mutex>

namespace pmcached::engine {

class EngineMutex {
 public:
  void lock() {
    if (!spin([this] { return mutex_.try_lock(); })) mutex_.lock();
  }
  bool try_lock() { return mutex_.try_lock(); }
  void unlock() { mutex_.unlock(); }

  void lock_shared() {
    if (!spin([this] { return mutex_.try_lock_shared(); })) mutex_.lock_shared();
  }
  bool try_lock_shared() { return mutex_.try_lock_shared(); }
  void unlock_shared() { mutex_.unlock_shared(); }

 private:
  // About 5-20 microseconds of pauses, depending on the CPU's pause latency.
  static constexpr int kSpins = 200;

  template <typename TryLock>
  static bool spin(const TryLock& try_lock) {
    for (int i = 0; i < kSpins; ++i) {
      if (try_lock()) return true;
      _mm_pause();
    }
    return false;
  }

  std::shared_mutex mutex_;
};

}  // namespace pmcached::engine

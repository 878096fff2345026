// FrameLatch: a buffer frame's reader-writer latch with a version for optimistic readers
// (seed 004 §3.6; LeanStore's optimistic latches): the version is odd while the latch is held
// exclusively and grows by two with every exclusive hold, so a reader that saw the same even
// version before and after reading the page knows no writer, evictor or loader touched it
// meanwhile, without writing to the frame at all.
//
// The lock, try_lock, unlock and *_shared members are std::shared_mutex's (BasicLockable
// and SharedLockable), so the latch works with std::unique_lock and std::shared_lock.
//
// Thread safety: every member from any thread; version() and validate() take no latch.
#pragma once

#include <atomic>
#include <cstdint>
#include <shared_mutex>

namespace pmcached::buffer {

class FrameLatch {
 public:
  // Optimistic readers: a version to check the page bytes against, odd if held exclusively
  // (then there is nothing consistent to read).
  [[nodiscard]] std::uint64_t version() const noexcept {
    return version_.load(std::memory_order_acquire);
  }
  [[nodiscard]] static bool exclusive(std::uint64_t version) noexcept { return (version & 1) != 0; }
  // True if nobody has held the latch exclusively since `version` was read: what was read from
  // the page in between is one consistent state of it.
  [[nodiscard]] bool validate(std::uint64_t version) const noexcept {
    std::atomic_thread_fence(std::memory_order_acquire);  // the page reads before the check
    return version_.load(std::memory_order_relaxed) == version;
  }

  void lock() {
    mutex_.lock();
    begin_exclusive();
  }
  [[nodiscard]] bool try_lock() {
    if (!mutex_.try_lock()) return false;
    begin_exclusive();
    return true;
  }
  void unlock() {
    // Only the holder writes the version: no read-modify-write needed.
    version_.store(version_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    mutex_.unlock();
  }
  void lock_shared() { mutex_.lock_shared(); }
  [[nodiscard]] bool try_lock_shared() { return mutex_.try_lock_shared(); }
  void unlock_shared() { mutex_.unlock_shared(); }

 private:
  void begin_exclusive() noexcept {
    version_.store(version_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);  // odd before any write to the page
  }

  std::atomic<std::uint64_t> version_{0};
  std::shared_mutex mutex_;
};

}  // namespace pmcached::buffer

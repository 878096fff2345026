#include "engine/buffer/gclock_policy.h"

namespace pmcached::buffer {

GClockPolicy::GClockPolicy(std::size_t frames, std::uint8_t k)
    : counts_(std::make_unique<std::atomic<std::uint8_t>[]>(frames)),
      resident_(frames, 0),
      frames_(frames),
      k_(k) {}

void GClockPolicy::on_load(FrameId frame, PageId /*page*/) noexcept {
  if (resident_[frame] == 0) ++resident_count_;
  resident_[frame] = 1;
  counts_[frame].store(0, std::memory_order_relaxed);
}

void GClockPolicy::on_hit(FrameId frame) noexcept {
  counts_[frame].store(k_, std::memory_order_relaxed);
}

void GClockPolicy::on_evict(FrameId frame, PageId /*page*/, bool /*evicted*/) noexcept {
  if (resident_[frame] != 0) --resident_count_;
  resident_[frame] = 0;
  counts_[frame].store(0, std::memory_order_relaxed);
}

FrameId GClockPolicy::pick_victim(const std::function<bool(FrameId)>& evictable) noexcept {
  if (resident_count_ == 0) return kNoFrame;
  std::uint64_t examined = 0;
  FrameId victim = kNoFrame;
  FrameId fallback = kNoFrame;  // the first evictable frame of the last turn
  bool any_evictable = false;
  const std::size_t steps = (static_cast<std::size_t>(k_) + 1) * frames_;
  for (std::size_t step = 0; step < steps; ++step) {
    if (step == frames_ && !any_evictable) break;
    const std::size_t frame = hand_;
    hand_ = hand_ + 1 == frames_ ? 0 : hand_ + 1;
    if (resident_[frame] == 0) continue;
    ++examined;
    if (!evictable(static_cast<FrameId>(frame))) continue;  // keeps its count
    any_evictable = true;
    if (fallback == kNoFrame && step + frames_ >= steps) fallback = static_cast<FrameId>(frame);
    std::uint8_t count = counts_[frame].load(std::memory_order_relaxed);
    if (count == 0) {
      victim = static_cast<FrameId>(frame);
      break;
    }
    // A hit racing this decrement wins: the count stays at k.
    counts_[frame].compare_exchange_strong(count, static_cast<std::uint8_t>(count - 1),
                                           std::memory_order_relaxed);
  }
  // Only hits racing the hand can keep every evictable frame referenced this long.
  if (victim == kNoFrame) victim = fallback;
  examined_.fetch_add(examined, std::memory_order_relaxed);
  return victim;
}

std::uint64_t GClockPolicy::frames_examined() const noexcept {
  return examined_.load(std::memory_order_relaxed);
}

std::vector<std::pair<std::string, std::string>> GClockPolicy::state() const {
  return {{"gclock_k", std::to_string(k_)},
          {"gclock_hand", std::to_string(hand_)},
          {"gclock_resident", std::to_string(resident_count_)}};
}

}  // namespace pmcached::buffer

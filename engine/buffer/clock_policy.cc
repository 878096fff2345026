#include "engine/buffer/clock_policy.h"

namespace pmcached::buffer {

ClockPolicy::ClockPolicy(std::size_t frames)
    : referenced_(std::make_unique<std::atomic<std::uint8_t>[]>(frames)),
      resident_(frames, 0),
      frames_(frames) {}

void ClockPolicy::on_load(FrameId frame, PageId /*page*/) noexcept {
  if (resident_[frame] == 0) ++resident_count_;
  resident_[frame] = 1;
  referenced_[frame].store(0, std::memory_order_relaxed);
}

void ClockPolicy::on_hit(FrameId frame) noexcept {
  referenced_[frame].store(1, std::memory_order_relaxed);
}

void ClockPolicy::on_evict(FrameId frame, PageId /*page*/, bool /*evicted*/) noexcept {
  if (resident_[frame] != 0) --resident_count_;
  resident_[frame] = 0;
  referenced_[frame].store(0, std::memory_order_relaxed);
}

FrameId ClockPolicy::pick_victim(const std::function<bool(FrameId)>& evictable) noexcept {
  if (resident_count_ == 0) return kNoFrame;
  std::uint64_t examined = 0;
  FrameId victim = kNoFrame;
  FrameId fallback = kNoFrame;  // the first evictable frame of the last turn
  bool any_evictable = false;
  // Two turns: the first may only clear bits, the second then finds a clear one.
  for (std::size_t step = 0; step < 2 * frames_; ++step) {
    if (step == frames_ && !any_evictable) break;
    const std::size_t frame = hand_;
    hand_ = hand_ + 1 == frames_ ? 0 : hand_ + 1;
    if (resident_[frame] == 0) continue;
    ++examined;
    if (!evictable(static_cast<FrameId>(frame))) continue;  // keeps its bit
    any_evictable = true;
    if (fallback == kNoFrame && step + frames_ >= 2 * frames_)
      fallback = static_cast<FrameId>(frame);
    if (referenced_[frame].load(std::memory_order_relaxed) != 0) {
      referenced_[frame].store(0, std::memory_order_relaxed);
      continue;
    }
    victim = static_cast<FrameId>(frame);
    break;
  }
  // Only hits racing the hand can keep every evictable frame referenced this long.
  if (victim == kNoFrame) victim = fallback;
  examined_.fetch_add(examined, std::memory_order_relaxed);
  return victim;
}

std::uint64_t ClockPolicy::frames_examined() const noexcept {
  return examined_.load(std::memory_order_relaxed);
}

std::vector<std::pair<std::string, std::string>> ClockPolicy::state() const {
  return {{"clock_hand", std::to_string(hand_)},
          {"clock_resident", std::to_string(resident_count_)}};
}

}  // namespace pmcached::buffer

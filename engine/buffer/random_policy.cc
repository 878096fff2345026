#include "engine/buffer/random_policy.h"

namespace pmcached::buffer {
namespace {

__extension__ using Uint128 = unsigned __int128;

}  // namespace

RandomPolicy::RandomPolicy(std::size_t frames, std::uint64_t seed)
    : resident_(frames, 0), frames_(frames), rng_(seed) {}

void RandomPolicy::on_load(FrameId frame, PageId /*page*/) noexcept {
  if (resident_[frame] == 0) ++resident_count_;
  resident_[frame] = 1;
}

void RandomPolicy::on_evict(FrameId frame, PageId /*page*/, bool /*evicted*/) noexcept {
  if (resident_[frame] != 0) --resident_count_;
  resident_[frame] = 0;
}

std::size_t RandomPolicy::next_start() noexcept {
  std::uint64_t z = (rng_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  // Lemire's multiply-shift: uniform without a division.
  return static_cast<std::size_t>((static_cast<Uint128>(z) * frames_) >> 64);
}

FrameId RandomPolicy::pick_victim(const std::function<bool(FrameId)>& evictable) noexcept {
  if (resident_count_ == 0) return kNoFrame;
  std::uint64_t examined = 0;
  FrameId victim = kNoFrame;
  std::size_t frame = next_start();
  for (std::size_t step = 0; step < frames_; ++step) {
    if (resident_[frame] != 0) {
      ++examined;
      if (evictable(static_cast<FrameId>(frame))) {
        victim = static_cast<FrameId>(frame);
        break;
      }
    }
    frame = frame + 1 == frames_ ? 0 : frame + 1;
  }
  examined_.fetch_add(examined, std::memory_order_relaxed);
  return victim;
}

std::uint64_t RandomPolicy::frames_examined() const noexcept {
  return examined_.load(std::memory_order_relaxed);
}

std::vector<std::pair<std::string, std::string>> RandomPolicy::state() const {
  return {{"random_resident", std::to_string(resident_count_)}};
}

}  // namespace pmcached::buffer

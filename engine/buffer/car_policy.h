// CarPolicy: Clock with Adaptive Replacement (Bansal and Modha 2004) as seed 001 §3.3.4 gives it
// (Algorithms 3.3-3.4, Zero's page_evictioner_car). Resident frames are in one of two clocks:
// T1 (referenced once while known to CAR) and T2 (referenced again); each frame has a
// reference bit set by a hit. Ghost lists B1 and B2 hold the page ids of pages evicted from T1
// and T2. The target size p of T1 (0 <= p <= c, c = frames) adapts on every miss that finds the
// page in a ghost list: up by max(1, |B2|/|B1|) for B1, down by max(1, |B1|/|B2|) for B2.
//
// on_load() is Algorithm 3.3 lines 7-24 (ghost trimming, then insertion into T1 or T2 with the
// bit clear); pick_victim() is Algorithm 3.4; on_evict() with `evicted` moves the page id into
// B1 or B2 (lines 9 and 19), a drop only removes the frame (Zero's unbuffered()). The choices
// the algorithm leaves open are in car_policy.cc, each with its source.
//
// A frame `evictable` refuses keeps its clock, place and bit (the hand moves past it); when
// every frame of the clock the algorithm chose is refused, the other clock is swept (Zero's
// blocked_t_1/blocked_t_2). pick_victim() returns kNoFrame when both clocks are refused. Should
// hits racing the hands keep setting bits past a bound of 4c + 4 steps, it takes the last
// evictable frame it looked at.
//
// Thread safety: as ReplacementPolicy; on_hit() is one relaxed atomic store.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/buffer/ghost_list.h"
#include "engine/buffer/replacement_policy.h"

namespace pmcached::buffer {

class CarPolicy final : public ReplacementPolicy {
 public:
  explicit CarPolicy(std::size_t frames);

  [[nodiscard]] EvictionKind kind() const noexcept override { return EvictionKind::kCar; }
  void on_load(FrameId frame, PageId page) noexcept override;
  void on_hit(FrameId frame) noexcept override;
  void on_evict(FrameId frame, PageId page, bool evicted) noexcept override;
  [[nodiscard]] FrameId pick_victim(
      const std::function<bool(FrameId)>& evictable) noexcept override;
  [[nodiscard]] std::uint64_t frames_examined() const noexcept override;
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> state() const override;

  // For tests and `stats`, with the serialised calls.
  [[nodiscard]] double p() const noexcept { return p_; }
  [[nodiscard]] std::size_t t1_size() const noexcept { return clocks_[kT1].size; }
  [[nodiscard]] std::size_t t2_size() const noexcept { return clocks_[kT2].size; }
  [[nodiscard]] std::size_t b1_size() const noexcept { return b1_.size(); }
  [[nodiscard]] std::size_t b2_size() const noexcept { return b2_.size(); }
  [[nodiscard]] bool in_t2(FrameId frame) const noexcept { return clock_of_[frame] == kT2; }

 private:
  static constexpr std::uint8_t kT1 = 0;
  static constexpr std::uint8_t kT2 = 1;
  static constexpr std::uint8_t kNone = 2;

  // A circular list of frames; `hand` is its head (the next frame looked at), the tail is
  // just behind it. Zero's multi_clock (seed 001 appendix A).
  struct Clock {
    FrameId hand = kNoFrame;
    std::size_t size = 0;
  };

  void add_tail(std::uint8_t clock, FrameId frame) noexcept;
  void remove(FrameId frame) noexcept;

  std::size_t c_;
  double p_ = 0;
  Clock clocks_[2];
  std::vector<std::uint8_t> clock_of_;  // kT1, kT2 or kNone
  std::vector<FrameId> prev_;
  std::vector<FrameId> next_;
  std::unique_ptr<std::atomic<std::uint8_t>[]> referenced_;
  GhostList b1_;
  GhostList b2_;
  std::atomic<std::uint64_t> examined_{0};
};

}  // namespace pmcached::buffer

// GClockPolicy: generalized CLOCK (Smith 1978) as seed 001 §3.3.3 describes it for Zero. Each
// frame has a referenced count: a hit sets it to k (Algorithm 3.1 line 3; it is set, not
// incremented), a newly loaded page starts at 0 (lines 7 and 10). The hand sweeps the frames in
// index order; a frame with count 0 is the victim, otherwise its count is decremented by one and
// the hand moves on (Algorithm 3.2 lines 5-10).
//
// A frame `evictable` refuses is passed without a decrement (as Zero does for a pinned frame,
// §3.3.3.2: "a page that is pinned is considered to be used"). pick_victim() returns kNoFrame
// after one turn in which no frame was evictable. Zero's loop has no end; this one stops after
// k + 1 turns (every count has reached 0 by then unless hits raced the hand) and then takes the
// first evictable frame of the last turn.
//
// Thread safety: as ReplacementPolicy. on_hit() is one relaxed atomic store; the hand decrements
// with a compare-and-swap so that a concurrent hit is never overwritten by a stale count.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/buffer/replacement_policy.h"

namespace pmcached::buffer {

class GClockPolicy final : public ReplacementPolicy {
 public:
  static constexpr std::uint8_t kDefaultK = 10;  // Zero's sm_bufferpool_gclock_k (Listing 3.4)

  explicit GClockPolicy(std::size_t frames, std::uint8_t k = kDefaultK);

  [[nodiscard]] EvictionKind kind() const noexcept override { return EvictionKind::kGClock; }
  void on_load(FrameId frame, PageId page) noexcept override;
  void on_hit(FrameId frame) noexcept override;
  void on_evict(FrameId frame, PageId page, bool evicted) noexcept override;
  [[nodiscard]] FrameId pick_victim(
      const std::function<bool(FrameId)>& evictable) noexcept override;
  [[nodiscard]] std::uint64_t frames_examined() const noexcept override;
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> state() const override;

 private:
  std::unique_ptr<std::atomic<std::uint8_t>[]> counts_;
  std::vector<std::uint8_t> resident_;  // touched only by the serialised calls
  std::size_t frames_;
  std::uint8_t k_;
  std::size_t resident_count_ = 0;
  std::size_t hand_ = 0;
  std::atomic<std::uint64_t> examined_{0};
};

}  // namespace pmcached::buffer

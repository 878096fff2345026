// ClockPolicy: second-chance CLOCK. One reference bit per frame, set on every hit; the hand
// sweeps the frames in index order, clears set bits and evicts the first evictable frame whose
// bit is clear. A newly loaded page starts with its bit clear (as GCLOCK's count starts at 0 in
// seed 001 Algorithm 3.1), so it must be hit once to survive a sweep.
//
// A frame `evictable` refuses keeps its bit (the hand passes it without clearing).
// pick_victim() returns kNoFrame after one turn in which no frame was evictable. It stops after
// two turns; should hits racing the hand have set every evictable bit again by then, it takes
// the first evictable frame of the second turn.
//
// Thread safety: as ReplacementPolicy. on_hit() is one relaxed atomic store.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/buffer/replacement_policy.h"

namespace pmcached::buffer {

class ClockPolicy final : public ReplacementPolicy {
 public:
  explicit ClockPolicy(std::size_t frames);

  [[nodiscard]] EvictionKind kind() const noexcept override { return EvictionKind::kClock; }
  void on_load(FrameId frame, PageId page) noexcept override;
  void on_hit(FrameId frame) noexcept override;
  void on_evict(FrameId frame, PageId page, bool evicted) noexcept override;
  [[nodiscard]] FrameId pick_victim(
      const std::function<bool(FrameId)>& evictable) noexcept override;
  [[nodiscard]] std::uint64_t frames_examined() const noexcept override;
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> state() const override;

 private:
  std::unique_ptr<std::atomic<std::uint8_t>[]> referenced_;
  std::vector<std::uint8_t> resident_;  // touched only by the serialised calls
  std::size_t frames_;
  std::size_t resident_count_ = 0;
  std::size_t hand_ = 0;
  std::atomic<std::uint64_t> examined_{0};
};

}  // namespace pmcached::buffer

// RandomPolicy: RANDOM with check of usage, as seed 001 §3.3.2 describes it for Zero. No
// statistics are kept (on_hit does nothing); pick_victim() sweeps the frames from a starting
// position and takes the first resident frame `evictable` accepts (Zero's
// page_evictioner_base::pick_victim(), Listing 3.2, where the check is a try-latch).
//
// The one departure: Zero starts each sweep just past its previous victim, which, when every
// frame is evictable, evicts frames in the order they were filled (FIFO, not random). Here each
// sweep starts at a frame drawn from a PRNG seeded at construction, which is the "selects a
// random page" of §3.3.2.1 and makes a run reproducible for a given seed.
//
// pick_victim() gives up with kNoFrame after one turn.
//
// Thread safety: as ReplacementPolicy; on_hit() is a no-op.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/buffer/replacement_policy.h"

namespace pmcached::buffer {

class RandomPolicy final : public ReplacementPolicy {
 public:
  RandomPolicy(std::size_t frames, std::uint64_t seed);

  [[nodiscard]] EvictionKind kind() const noexcept override { return EvictionKind::kRandom; }
  void on_load(FrameId frame, PageId page) noexcept override;
  void on_hit(FrameId /*frame*/) noexcept override {}
  void on_evict(FrameId frame, PageId page, bool evicted) noexcept override;
  [[nodiscard]] FrameId pick_victim(
      const std::function<bool(FrameId)>& evictable) noexcept override;
  [[nodiscard]] std::uint64_t frames_examined() const noexcept override;
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> state() const override;

 private:
  std::size_t next_start() noexcept;  // uniform in [0, frames_)

  std::vector<std::uint8_t> resident_;
  std::size_t frames_;
  std::size_t resident_count_ = 0;
  std::uint64_t rng_;  // splitmix64 state
  std::atomic<std::uint64_t> examined_{0};
};

}  // namespace pmcached::buffer

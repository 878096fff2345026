// ReplacementPolicy: which resident frame the buffer manager evicts next.
//
// Five policies (--eviction): RANDOM as Zero implements it (seed 001 §3: a sweep from a random
// or rotating position that takes the first evictable frame), CLOCK, GCLOCK (a frame's count is
// set to k = 10 on use and decremented by the hand; seed 001), CAR (T1/T2 clocks, ghost lists
// B1/B2, adaptive target p; seed 001 Algorithms 3.3-3.4) and LRU (seed 003).
//
// The buffer manager tells the policy about every load, hit and eviction; pick_victim() asks it
// for a victim among the resident frames. A frame that may not be evicted now (pinned, latched,
// the root, a parent of swizzled children: `evictable` says) is passed over without losing its
// statistics: a CLOCK reference bit or a GCLOCK count is not consumed by a frame that could not
// have been taken anyway.
//
// Thread safety: on_hit() may be called from any thread at any time (fixes are concurrent) and
// must be cheap (a relaxed store for the clocks). on_load(), on_evict(), pick_victim() and state()
// are called by one thread at a time (the buffer manager serialises them); frames_examined() may
// be read from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/buffer/buffer_types.h"

namespace pmcached::buffer {

class ReplacementPolicy {
 public:
  virtual ~ReplacementPolicy() = default;

  [[nodiscard]] virtual EvictionKind kind() const noexcept = 0;

  // `page` was read (or created) into the free frame `frame`: a miss.
  virtual void on_load(FrameId frame, PageId page) noexcept = 0;
  // `frame` was fixed while resident: a hit.
  virtual void on_hit(FrameId frame) noexcept = 0;
  // The page in `frame` left the pool (evicted, or dropped because the engine freed it);
  // `evicted` is false for a drop (CAR keeps no ghost for a page that no longer exists).
  virtual void on_evict(FrameId frame, PageId page, bool evicted) noexcept = 0;

  // A resident frame to evict, chosen by the policy among those `evictable` accepts, or
  // kNoFrame if it found none after looking at every resident frame (at most twice for the
  // clocks, k + 1 times for GCLOCK). Does not remove the frame: the buffer manager calls
  // on_evict() once the page is out, or nothing if it then could not evict it after all (the
  // next call may pick it again). `evictable` must not block (LRU calls it holding the mutex
  // that on_hit() takes); a try-latch is fine.
  [[nodiscard]] virtual FrameId pick_victim(
      const std::function<bool(FrameId)>& evictable) noexcept = 0;

  // Frames the policy looked at in pick_victim() since it was made (eviction cost).
  [[nodiscard]] virtual std::uint64_t frames_examined() const noexcept = 0;
  // Policy-specific state for `stats engine` (CAR's p and list sizes, ...).
  [[nodiscard]] virtual std::vector<std::pair<std::string, std::string>> state() const = 0;
};

// A policy for `frames` frames; `seed` makes RANDOM reproducible.
[[nodiscard]] std::unique_ptr<ReplacementPolicy> make_replacement_policy(EvictionKind kind,
                                                                         std::size_t frames,
                                                                         std::uint64_t seed = 1);

}  // namespace pmcached::buffer

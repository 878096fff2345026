#include "bench/policy_simulation.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "engine/buffer/replacement_policy.h"

namespace pmcached::bench {

using buffer::FrameId;
using buffer::kNoFrame;
using Clock = std::chrono::steady_clock;

// An interval this long was interrupted or preempted: no pick takes it (the longest in the
// default grid look at a few hundred frames, about a microsecond).
constexpr auto kPreempted = std::chrono::microseconds(50);

SimulatedRun simulate_policy(buffer::EvictionKind kind, std::size_t frames, std::uint32_t pages,
                             const std::vector<std::uint32_t>& stream, std::size_t warmup,
                             std::uint64_t seed) {
  auto policy = buffer::make_replacement_policy(kind, frames, seed);
  std::vector<FrameId> frame_of(pages + 1, kNoFrame);
  std::vector<std::uint32_t> page_in(frames, 0);
  const std::function<bool(FrameId)> evictable = [](FrameId) { return true; };
  std::size_t used = 0;
  SimulatedRun run;
  Clock::duration picking{}, empty{};
  std::uint64_t timed = 0;
  std::uint64_t examined_before = 0;
  for (std::size_t i = 0; i < stream.size(); ++i) {
    const bool counted = i >= warmup;
    if (i == warmup) examined_before = policy->frames_examined();
    const std::uint32_t page = stream[i];
    run.references += counted;
    if (frame_of[page] != kNoFrame) {
      policy->on_hit(frame_of[page]);
      continue;
    }
    run.misses += counted;
    FrameId frame;
    if (used < frames) {
      frame = static_cast<FrameId>(used++);
    } else {
      // Both intervals hold the same share of steady_clock's own cost, in the same place.
      const auto before = Clock::now();
      const auto started = Clock::now();
      frame = policy->pick_victim(evictable);
      const auto done = Clock::now();
      if (counted) {
        ++run.evictions;
        if (started - before < kPreempted && done - started < kPreempted) {
          empty += started - before;
          picking += done - started;
          ++timed;
        }
      }
      if (frame == kNoFrame) {
        std::fprintf(stderr, "%s found no victim in a pool of evictable frames\n",
                     std::string(buffer::eviction_name(kind)).c_str());
        std::exit(1);
      }
      policy->on_evict(frame, page_in[frame], true);
      frame_of[page_in[frame]] = kNoFrame;
    }
    policy->on_load(frame, page);
    frame_of[page] = frame;
    page_in[frame] = page;
  }
  run.examined = policy->frames_examined() - examined_before;
  if (timed != 0) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(picking - empty).count();
    run.pick_ns = std::max(0.0, static_cast<double>(ns) / static_cast<double>(timed));
  }
  return run;
}

}  // namespace pmcached::bench

// A replacement policy driven over a page-reference stream exactly as the buffer manager drives
// it, with every frame evictable: a hit calls on_hit; a miss takes a free frame while there is
// one (frames 0, 1, 2, ... in the order the buffer manager's free list hands them out), else
// pick_victim + on_evict + on_load. The buffer benchmark's miss rates and eviction costs, and
// the reference its --real-miss mode compares the real buffer manager with.
//
// Thread safety: pure function (the policy is made and dropped inside).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "bench/page_stream.h"
#include "engine/buffer/buffer_types.h"

namespace pmcached::bench {

struct SimulatedRun {
  std::uint64_t references = 0, misses = 0, evictions = 0, examined = 0;
  // Per counted eviction: steady_clock around pick_victim(), less an empty steady_clock interval
  // taken just before it in the same place (the clock costs more than most picks); evictions
  // where either interval took 50 us or more (an interrupt, a preemption) are left out.
  double pick_ns = 0;
};

// The seed of repetition `rep`'s stream of `skew` (each repetition draws new streams; every
// mode of the benchmark draws them alike, so --real-miss replays the first repetition's).
[[nodiscard]] constexpr std::uint64_t stream_seed(std::uint64_t seed, unsigned rep,
                                                  PageSkew skew) noexcept {
  return seed * 1000 + rep * 10 + static_cast<std::uint64_t>(skew);
}

// Pages are 1 .. pages; the first `warmup` references of `stream` are not counted. `seed` is
// RANDOM's.
[[nodiscard]] SimulatedRun simulate_policy(buffer::EvictionKind kind, std::size_t frames,
                                           std::uint32_t pages,
                                           const std::vector<std::uint32_t>& stream,
                                           std::size_t warmup, std::uint64_t seed);

}  // namespace pmcached::bench

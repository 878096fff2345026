#include "engine/buffer/replacement_policy.h"

#include "engine/buffer/clock_policy.h"

namespace pmcached::buffer {

std::unique_ptr<ReplacementPolicy> make_replacement_policy(EvictionKind kind, std::size_t frames,
                                                           std::uint64_t /*seed*/) {
  switch (kind) {
    case EvictionKind::kClock:
    // Not yet implemented: CLOCK stands in for these until their own files land.
    case EvictionKind::kRandom:
    case EvictionKind::kGClock:
    case EvictionKind::kCar:
    case EvictionKind::kLru:
      return std::make_unique<ClockPolicy>(frames);
  }
  return std::make_unique<ClockPolicy>(frames);
}

}  // namespace pmcached::buffer

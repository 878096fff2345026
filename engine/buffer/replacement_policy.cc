#include "engine/buffer/replacement_policy.h"

#include "engine/buffer/car_policy.h"
#include "engine/buffer/clock_policy.h"
#include "engine/buffer/gclock_policy.h"
#include "engine/buffer/lru_policy.h"
#include "engine/buffer/random_policy.h"

namespace pmcached::buffer {

std::unique_ptr<ReplacementPolicy> make_replacement_policy(EvictionKind kind, std::size_t frames,
                                                           std::uint64_t seed) {
  switch (kind) {
    case EvictionKind::kRandom: return std::make_unique<RandomPolicy>(frames, seed);
    case EvictionKind::kClock: return std::make_unique<ClockPolicy>(frames);
    case EvictionKind::kGClock: return std::make_unique<GClockPolicy>(frames);
    case EvictionKind::kCar: return std::make_unique<CarPolicy>(frames);
    case EvictionKind::kLru: return std::make_unique<LruPolicy>(frames);
  }
  return std::make_unique<ClockPolicy>(frames);
}

}  // namespace pmcached::buffer

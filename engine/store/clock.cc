// SystemClock: wall-clock seconds for the store's expiry decisions.
#include "engine/store/clock.h"

#include <ctime>

namespace pmcached::engine {

std::int64_t SystemClock::now() const noexcept {
  // The coarse clock is read from the vDSO without a syscall and is exact to a few
  // milliseconds, plenty for whole-second expiry; it is read once per store operation.
  timespec ts{};
#ifdef CLOCK_REALTIME_COARSE
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
#else
  clock_gettime(CLOCK_REALTIME, &ts);
#endif
  return static_cast<std::int64_t>(ts.tv_sec);
}

}  // namespace pmcached::engine

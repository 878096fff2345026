// LlcCounter over perf_event_open(2). See llc_counter.h.
#include "bench/llc_counter.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

namespace pmcached::bench {

LlcCounter::LlcCounter() {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.type = PERF_TYPE_HARDWARE;
  attr.size = sizeof attr;
  attr.config = PERF_COUNT_HW_CACHE_MISSES;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  fd_ = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
}

LlcCounter::~LlcCounter() {
  if (fd_ >= 0) close(fd_);
}

void LlcCounter::start() noexcept {
  if (fd_ < 0) return;
  ioctl(fd_, PERF_EVENT_IOC_RESET, 0);
  ioctl(fd_, PERF_EVENT_IOC_ENABLE, 0);
}

std::optional<std::uint64_t> LlcCounter::stop() noexcept {
  if (fd_ < 0) return std::nullopt;
  ioctl(fd_, PERF_EVENT_IOC_DISABLE, 0);
  std::uint64_t count = 0;
  if (read(fd_, &count, sizeof count) != static_cast<ssize_t>(sizeof count)) return std::nullopt;
  return count;
}

}  // namespace pmcached::bench

#include "server/descriptor_limit.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace pmcached::server {
namespace {

// Measured at idle (stop 54): 11 descriptors besides the workers' (std streams, the listener's
// reactor, the listener, the log); rounded up, plus one being refused at -c.
constexpr std::size_t kBaseHeadroom = 20;
// Each worker's EventLoop holds its epoll set and its wake-up eventfd; its io_context opens
// none, since it owns no socket or timer (event_loop.h).
constexpr std::size_t kPerWorker = 2;

std::size_t as_size(rlim_t value) {
  return value == RLIM_INFINITY ? static_cast<std::size_t>(-1) : static_cast<std::size_t>(value);
}

}  // namespace

std::size_t descriptor_headroom(unsigned threads) noexcept {
  return kBaseHeadroom + kPerWorker * threads;
}

DescriptorBudget fit_descriptor_limit(std::size_t max_connections, unsigned threads) {
  DescriptorBudget budget;
  const std::size_t needed = max_connections + descriptor_headroom(threads);
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    budget.message = std::string("cannot read the open-file limit: ") + std::strerror(errno);
    return budget;
  }
  int raise_error = 0;
  if (as_size(limit.rlim_cur) < needed) {
    rlimit wanted = limit;
    wanted.rlim_cur = static_cast<rlim_t>(needed);
    if (as_size(wanted.rlim_max) < needed) wanted.rlim_max = static_cast<rlim_t>(needed);
    if (setrlimit(RLIMIT_NOFILE, &wanted) == 0) {
      limit = wanted;
    } else {
      raise_error = errno;
      // Not permitted above the hard limit: take what it allows.
      wanted = limit;
      wanted.rlim_cur = limit.rlim_max;
      if (setrlimit(RLIMIT_NOFILE, &wanted) == 0) limit = wanted;
    }
  }
  budget.soft_limit = as_size(limit.rlim_cur);
  budget.hard_limit = as_size(limit.rlim_max);
  if (budget.soft_limit < max_connections) {
    budget.message = "-c " + std::to_string(max_connections) + " needs " + std::to_string(needed) +
                     " open files but the limit is " + std::to_string(budget.soft_limit) +
                     " (hard " + std::to_string(budget.hard_limit) + ") and cannot be raised (" +
                     std::strerror(raise_error) + "): lower -c or raise the hard limit";
    return budget;
  }
  budget.fits = true;
  budget.connection_slots = max_connections;
  if (budget.soft_limit < needed) {
    const std::size_t headroom = descriptor_headroom(threads);
    budget.connection_slots =
        budget.soft_limit > headroom ? std::min(max_connections, budget.soft_limit - headroom) : 1;
    budget.message = "open-file limit " + std::to_string(budget.soft_limit) + " admits " +
                     std::to_string(budget.connection_slots) + " of -c " +
                     std::to_string(max_connections) + " connections (the server keeps " +
                     std::to_string(headroom) + " descriptors for itself); the rest are refused";
  }
  return budget;
}

}  // namespace pmcached::server

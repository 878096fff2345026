// Fitting the open-file limit (RLIMIT_NOFILE) to -c at start-up, as memcached does.
//
// Every connection is a descriptor, and the server needs a few more of its own (listener,
// each worker's reactor, the log, a connection being refused). At start-up the soft limit is
// raised to -c plus that headroom, the hard limit too when the process may. When the hard
// limit is below -c itself the server refuses to start (memcached: exit 71, EX_OSERR); when it
// fits -c but not the headroom, fewer connections than -c are admitted (memcached likewise
// counts its own descriptors in -c) and the rest get "ERROR Too many open connections".
//
// Thread safety: call once, at start-up, before any thread is started.
#pragma once

#include <cstddef>
#include <string>

namespace pmcached::server {

struct DescriptorBudget {
  bool fits = false;                 // false: the limit cannot hold -c descriptors
  std::size_t connection_slots = 0;  // connections to admit (at most -c)
  std::size_t soft_limit = 0;        // RLIMIT_NOFILE after the adjustment
  std::size_t hard_limit = 0;
  std::string message;  // why it does not fit, or why fewer than -c are admitted
};

// Descriptors the server holds besides its connections, with `threads` workers.
[[nodiscard]] std::size_t descriptor_headroom(unsigned threads) noexcept;

// Raises RLIMIT_NOFILE (never lowers it) to fit `max_connections` and the headroom.
[[nodiscard]] DescriptorBudget fit_descriptor_limit(std::size_t max_connections, unsigned threads);

}  // namespace pmcached::server

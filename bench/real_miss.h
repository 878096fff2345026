// Miss rates through the real buffer manager (issue 18): the uniform and Zipf page-reference
// streams of the simulation (policy_simulation.h), each reference a fix and unfix by id of a
// page of a real page file, through a BufferManager of each policy with the hash page table, its
// misses beside the simulation's for the same stream, pool and RANDOM seed. Single-threaded
// and with every unpinned frame evictable, the buffer manager should drive the policy exactly
// as the simulation does, so the two counts should be equal.
//
// Thread safety: call from one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/page_stream.h"
#include "engine/buffer/buffer_types.h"

namespace pmcached::bench {

struct RealMissOptions {
  std::uint32_t pages = 100000;
  std::size_t warmup = 1000000, references = 2000000;
  std::vector<double> pools{10};  // % of the pages
  std::vector<buffer::EvictionKind> policies;
  std::vector<PageSkew> workloads;
  double theta = 0.99;
  std::uint64_t seed = 18;  // streams as the simulation's first repetition draws them
  std::size_t page_size = buffer::kMinPageSize;  // a miss rate does not depend on it
  std::string dir;  // parent of the scratch directory; empty: /dev/shm, else /tmp
  std::string csv;  // one row per run
};

// Prints the table to stdout; returns the exit status (0; 1 if a fix returned a wrong page;
// 2 if the CSV cannot be written).
int run_real_miss(const RealMissOptions& options);

}  // namespace pmcached::bench

// The fix cost on a warm, fully resident buffer pool (issue 18, seed 001 §2.3.2): random
// root-to-leaf traversals of a tree of pages, shared latches with latch coupling (the child is
// fixed before the parent is released), through a real BufferManager over a page file, in three
// ways:
//   hash-fix        --page-table hash: fix(id) of every page on the path
//   hash-fix-child  --page-table hash: fix_child() (the same table lookups, the engine's call)
//   swizzle         --page-table swizzle: fix_child() follows tagged frame references
// and in two scopes:
//   path            every page of the path is fixed, the root (by id, through the table) too
//   below-root      each thread holds the root fixed for the whole run; only the fixes below it
//                   are timed: seed 001's measure (Zero's fix() of non-root pages)
// The pool holds every page and is warmed by a sweep over every leaf, so no fix misses (checked:
// a run with a miss or a wrong leaf is an error). Each thread times batches of traversals and
// reports its median batch, so that the preemptions of a shared machine do not decide the figure;
// the threads' CPU time over the wall-clock time says whether they really ran side by side.
// Pages use the tiny layout of the buffer manager's tests: u32 child count at 16, 8-byte child
// slots from 24, own id in the last 8 bytes.
//
// Thread safety: run_fix_cost() runs its own threads; call it from one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/buffer/buffer_types.h"

namespace pmcached::bench {

struct FixCostOptions {
  std::uint32_t fanout = 64;
  unsigned levels = 3;  // root included: 3 = root, fanout inner pages, fanout^2 leaves
  std::size_t page_size = buffer::kDefaultPageSize;
  std::size_t traversals = 400000;  // per thread and run
  unsigned repetitions = 5;
  std::vector<unsigned> threads{1, 2};
  buffer::EvictionKind eviction = buffer::EvictionKind::kClock;  // its on_hit is on every fix
  std::uint64_t seed = 18;
  std::string dir;  // parent of the scratch directory; empty: /dev/shm, else /tmp
  std::string csv;  // one row per run
};

// Prints the tables to stdout; returns the exit status (0, or 1 if a run missed or returned a
// wrong page, 2 if the CSV cannot be written).
int run_fix_cost(const FixCostOptions& options);

}  // namespace pmcached::bench

// The two pool blocks a paged structure in PM is made of (the redo log, the double-write buffer):
// a root block and a region. Both are allocated as index blocks, so the store's chunk evacuation
// (item chunks only) never picks them; asking for more than kMaxSmallBlock makes the region a
// large run of whole chunks, which starts cache-line aligned.
//
// Thread safety: as pm::Allocator's allocate() and free().
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "engine/pm/allocator.h"

namespace pmcached::buffer {

struct PoolBlocks {
  std::uint64_t root = 0;
  std::uint64_t region = 0;
};

// Both blocks, or nullopt (and nothing allocated) if the pool has no room for one of them.
[[nodiscard]] inline std::optional<PoolBlocks> allocate_root_and_region(
    pm::Allocator& allocator, std::size_t root_bytes, std::uint64_t region_bytes) {
  const std::uint64_t root = allocator.allocate(root_bytes, pm::BlockUse::kIndex);
  const std::uint64_t region = allocator.allocate(
      std::max<std::uint64_t>(region_bytes, pm::kMaxSmallBlock + 1), pm::BlockUse::kIndex);
  if (root != 0 && region != 0) return PoolBlocks{root, region};
  if (root != 0) allocator.free(root);
  if (region != 0) allocator.free(region);
  return std::nullopt;
}

}  // namespace pmcached::buffer

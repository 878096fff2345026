// BufferFrame: the control block of one buffer-pool frame (the page bytes live apart, in one
// aligned allocation for the whole pool).
//
// pins counts the fixes (PageGuards) holding the frame; the evictor claims an unpinned frame
// by moving pins from 0 to -1 (kEvicting), which fails while anyone holds a pin and makes
// every later pin attempt fail until the eviction is over or abandoned. A swizzled reference
// is not a pin: what keeps a swizzled child's parent resident is swizzled_children, which the
// evictor checks separately (docs/BUFFER_MANAGER.md).
//
// The latch's version lets a reader use the page with neither pin nor latch and check afterwards
// that nothing changed it (BufferManager::read_optimistic).
//
// Thread safety: the atomics may be read at any time. `page` changes only under an exclusive
// latch while the frame is claimed by its loader or evictor; `dirty` is set under an exclusive
// latch; `parent` and `swizzled_children` change while the parent's latch is held.
#pragma once

#include <atomic>
#include <cstdint>

#include "engine/buffer/buffer_types.h"
#include "engine/buffer/frame_latch.h"

namespace pmcached::buffer {

struct alignas(64) BufferFrame {
  static constexpr std::int32_t kEvicting = -1;
  // `parent` while a swizzle of our reference is under way (not yet swizzled).
  static constexpr FrameId kSwizzling = kNoFrame - 1;

  // An optimistic reader needs only the first cache line: the page id and the latch's version.
  std::atomic<PageId> page{kNoPage};  // kNoPage: free, or a load that failed
  FrameLatch latch;
  std::atomic<std::int32_t> pins{0};
  std::atomic<bool> dirty{false};
  // kSwizzle: the frame whose page holds our tagged reference (kNoFrame: not swizzled;
  // kSwizzling: being swizzled).
  std::atomic<FrameId> parent{kNoFrame};
  // kSwizzle: tagged references in our page; > 0 keeps the frame resident.
  std::atomic<std::uint32_t> swizzled_children{0};

  // One more pin unless the frame is being evicted.
  [[nodiscard]] bool try_pin() noexcept {
    std::int32_t p = pins.load(std::memory_order_relaxed);
    do {
      if (p < 0) return false;
    } while (!pins.compare_exchange_weak(p, p + 1, std::memory_order_acquire,
                                         std::memory_order_relaxed));
    return true;
  }
  void unpin() noexcept { pins.fetch_sub(1, std::memory_order_release); }

  // The evictor's claim: only an unpinned frame.
  [[nodiscard]] bool try_claim() noexcept {
    std::int32_t unpinned = 0;
    return pins.compare_exchange_strong(unpinned, kEvicting, std::memory_order_acquire,
                                        std::memory_order_relaxed);
  }
};

}  // namespace pmcached::buffer

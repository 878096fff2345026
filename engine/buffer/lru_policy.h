// LruPolicy: least recently used, as seed 003's buffer pool does it: the resident frames in a
// doubly linked list from least to most recently used; a load or a hit puts the frame at the
// MRU end; the victim is the first frame from the LRU end that `evictable` accepts. A refused
// frame keeps its place. pick_victim() gives up with kNoFrame after one pass over the list.
//
// Thread safety: as ReplacementPolicy. A hit relinks the list, so every call takes one small
// mutex (the cost CLOCK avoids, seed 001 §3.1). pick_victim() calls `evictable` with that mutex
// held: it must not wait for anything a thread inside on_hit() may hold (a try-latch is fine).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "engine/buffer/replacement_policy.h"

namespace pmcached::buffer {

class LruPolicy final : public ReplacementPolicy {
 public:
  explicit LruPolicy(std::size_t frames);

  [[nodiscard]] EvictionKind kind() const noexcept override { return EvictionKind::kLru; }
  void on_load(FrameId frame, PageId page) noexcept override;
  void on_hit(FrameId frame) noexcept override;
  void on_evict(FrameId frame, PageId page, bool evicted) noexcept override;
  [[nodiscard]] FrameId pick_victim(
      const std::function<bool(FrameId)>& evictable) noexcept override;
  [[nodiscard]] std::uint64_t frames_examined() const noexcept override;
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> state() const override;

 private:
  struct Link {
    FrameId prev = kNoFrame;
    FrameId next = kNoFrame;
    bool linked = false;
  };

  void unlink(FrameId frame) noexcept;
  void push_mru(FrameId frame) noexcept;

  mutable std::mutex mutex_;
  std::vector<Link> links_;  // guarded by mutex_
  FrameId lru_ = kNoFrame;   // head: the next victim
  FrameId mru_ = kNoFrame;   // tail
  std::size_t size_ = 0;
  std::atomic<std::uint64_t> examined_{0};
};

}  // namespace pmcached::buffer

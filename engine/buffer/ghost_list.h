// GhostList: the page ids of recently evicted pages in eviction order, oldest first, with
// constant-time lookup and removal by id: CAR's B1 and B2 (seed 001 §3.3.4.2, Zero's
// hashtable_queue). Nodes live in an array sized at construction; a push beyond the capacity
// first drops the oldest id.
//
// Thread safety: none; CarPolicy calls it only from its serialised calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "engine/buffer/buffer_types.h"

namespace pmcached::buffer {

class GhostList {
 public:
  explicit GhostList(std::size_t capacity);

  [[nodiscard]] std::size_t size() const noexcept { return index_.size(); }
  [[nodiscard]] bool empty() const noexcept { return index_.empty(); }
  [[nodiscard]] bool contains(PageId page) const noexcept { return index_.contains(page); }

  // Appends `page` as the newest entry (it must not be present yet).
  void push_back(PageId page);
  // Removes `page` if present; true if it was.
  bool erase(PageId page) noexcept;
  // Removes and returns the oldest entry, or kNoPage if empty.
  PageId pop_front() noexcept;

 private:
  static constexpr std::uint32_t kNil = UINT32_MAX;
  struct Node {
    PageId page = kNoPage;
    std::uint32_t prev = kNil;
    std::uint32_t next = kNil;  // also links the free nodes
  };

  void unlink(std::uint32_t node) noexcept;

  std::vector<Node> nodes_;
  absl::flat_hash_map<PageId, std::uint32_t> index_;
  std::uint32_t oldest_ = kNil;
  std::uint32_t newest_ = kNil;
  std::uint32_t free_ = kNil;
};

}  // namespace pmcached::buffer

#include "engine/buffer/ghost_list.h"

namespace pmcached::buffer {

GhostList::GhostList(std::size_t capacity) : nodes_(capacity == 0 ? 1 : capacity) {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    nodes_[i].next = i + 1 < nodes_.size() ? static_cast<std::uint32_t>(i + 1) : kNil;
  }
  free_ = 0;
  index_.reserve(nodes_.size());
}

void GhostList::push_back(PageId page) {
  if (free_ == kNil) pop_front();
  const std::uint32_t node = free_;
  free_ = nodes_[node].next;
  nodes_[node] = Node{page, newest_, kNil};
  if (newest_ == kNil) {
    oldest_ = node;
  } else {
    nodes_[newest_].next = node;
  }
  newest_ = node;
  index_.emplace(page, node);
}

void GhostList::unlink(std::uint32_t node) noexcept {
  Node& n = nodes_[node];
  if (n.prev == kNil) {
    oldest_ = n.next;
  } else {
    nodes_[n.prev].next = n.next;
  }
  if (n.next == kNil) {
    newest_ = n.prev;
  } else {
    nodes_[n.next].prev = n.prev;
  }
  n = Node{kNoPage, kNil, free_};
  free_ = node;
}

bool GhostList::erase(PageId page) noexcept {
  auto it = index_.find(page);
  if (it == index_.end()) return false;
  unlink(it->second);
  index_.erase(it);
  return true;
}

PageId GhostList::pop_front() noexcept {
  if (oldest_ == kNil) return kNoPage;
  const PageId page = nodes_[oldest_].page;
  index_.erase(page);
  unlink(oldest_);
  return page;
}

}  // namespace pmcached::buffer

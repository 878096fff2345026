#include "engine/buffer/lru_policy.h"

namespace pmcached::buffer {

LruPolicy::LruPolicy(std::size_t frames) : links_(frames) {}

void LruPolicy::unlink(FrameId frame) noexcept {
  Link& link = links_[frame];
  if (link.prev == kNoFrame) {
    lru_ = link.next;
  } else {
    links_[link.prev].next = link.next;
  }
  if (link.next == kNoFrame) {
    mru_ = link.prev;
  } else {
    links_[link.next].prev = link.prev;
  }
  link = Link{};
  --size_;
}

void LruPolicy::push_mru(FrameId frame) noexcept {
  Link& link = links_[frame];
  link.prev = mru_;
  link.next = kNoFrame;
  link.linked = true;
  if (mru_ == kNoFrame) {
    lru_ = frame;
  } else {
    links_[mru_].next = frame;
  }
  mru_ = frame;
  ++size_;
}

void LruPolicy::on_load(FrameId frame, PageId /*page*/) noexcept {
  std::lock_guard lock(mutex_);
  if (links_[frame].linked) unlink(frame);
  push_mru(frame);
}

void LruPolicy::on_hit(FrameId frame) noexcept {
  std::lock_guard lock(mutex_);
  if (!links_[frame].linked || frame == mru_) return;
  unlink(frame);
  push_mru(frame);
}

void LruPolicy::on_evict(FrameId frame, PageId /*page*/, bool /*evicted*/) noexcept {
  std::lock_guard lock(mutex_);
  if (links_[frame].linked) unlink(frame);
}

FrameId LruPolicy::pick_victim(const std::function<bool(FrameId)>& evictable) noexcept {
  std::lock_guard lock(mutex_);
  std::uint64_t examined = 0;
  FrameId victim = kNoFrame;
  for (FrameId frame = lru_; frame != kNoFrame; frame = links_[frame].next) {
    ++examined;
    if (evictable(frame)) {
      victim = frame;
      break;
    }
  }
  examined_.fetch_add(examined, std::memory_order_relaxed);
  return victim;
}

std::uint64_t LruPolicy::frames_examined() const noexcept {
  return examined_.load(std::memory_order_relaxed);
}

std::vector<std::pair<std::string, std::string>> LruPolicy::state() const {
  std::lock_guard lock(mutex_);
  return {{"lru_resident", std::to_string(size_)}};
}

}  // namespace pmcached::buffer

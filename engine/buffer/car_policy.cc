#include "engine/buffer/car_policy.h"

#include <algorithm>
#include <cstdio>

namespace pmcached::buffer {

// B1 never holds more than c ids (|T1| + |B1| <= c); B2 at most 2c, reached only if the buffer
// manager evicts every frame of T2 without loading in between.
CarPolicy::CarPolicy(std::size_t frames)
    : c_(frames),
      clock_of_(frames, kNone),
      prev_(frames, kNoFrame),
      next_(frames, kNoFrame),
      referenced_(std::make_unique<std::atomic<std::uint8_t>[]>(frames)),
      b1_(frames),
      b2_(2 * frames) {}

void CarPolicy::add_tail(std::uint8_t clock, FrameId frame) noexcept {
  Clock& k = clocks_[clock];
  if (k.hand == kNoFrame) {
    k.hand = frame;
    prev_[frame] = next_[frame] = frame;
  } else {
    const FrameId tail = prev_[k.hand];
    prev_[frame] = tail;
    next_[frame] = k.hand;
    next_[tail] = frame;
    prev_[k.hand] = frame;
  }
  ++k.size;
  clock_of_[frame] = clock;
}

void CarPolicy::remove(FrameId frame) noexcept {
  Clock& k = clocks_[clock_of_[frame]];
  if (--k.size == 0) {
    k.hand = kNoFrame;
  } else {
    next_[prev_[frame]] = next_[frame];
    prev_[next_[frame]] = prev_[frame];
    if (k.hand == frame) k.hand = next_[frame];
  }
  clock_of_[frame] = kNone;
  prev_[frame] = next_[frame] = kNoFrame;
}

void CarPolicy::on_load(FrameId frame, PageId page) noexcept {
  if (clock_of_[frame] != kNone) remove(frame);  // not expected: a load into a used frame
  const auto c = static_cast<double>(c_);
  const bool in_b1 = b1_.contains(page);
  const bool in_b2 = !in_b1 && b2_.contains(page);
  if (!in_b1 && !in_b2) {
    // Lines 7-10, after EVICT: the sizes here are those after the eviction that made room.
    // Zero tests them with >= and without the |T1| + |T2| = c guard of line 5 (Listing 3.9
    // lines 33-39); without drops the two agree, with drops only Zero's keeps
    // |T1| + |B1| <= c. "REMOVE_NEXT" takes the least recently evicted id (Zero's
    // remove_front(); [BM04] "discard the LRU page").
    const std::size_t t1 = clocks_[kT1].size;
    const std::size_t t2 = clocks_[kT2].size;
    if (t1 + b1_.size() >= c_ && !b1_.empty()) {
      b1_.pop_front();
    } else if (t1 + t2 + b1_.size() + b2_.size() >= 2 * c_ && !b2_.empty()) {
      b2_.pop_front();
    }
    add_tail(kT1, frame);  // line 14
  } else if (in_b1) {
    // Line 17, with |B1| and |B2| before x leaves B1; real division as in the algorithm
    // (Zero divides integers).
    const double delta = std::max(1.0, static_cast<double>(b2_.size()) / b1_.size());
    p_ = std::min(p_ + delta, c);
    b1_.erase(page);
    add_tail(kT2, frame);  // line 18
  } else {
    const double delta = std::max(1.0, static_cast<double>(b1_.size()) / b2_.size());
    p_ = std::max(p_ - delta, 0.0);  // line 21
    b2_.erase(page);
    add_tail(kT2, frame);  // line 22
  }
  referenced_[frame].store(0, std::memory_order_relaxed);  // lines 15, 19, 23
}

void CarPolicy::on_hit(FrameId frame) noexcept {
  referenced_[frame].store(1, std::memory_order_relaxed);  // Algorithm 3.3 line 3
}

void CarPolicy::on_evict(FrameId frame, PageId page, bool evicted) noexcept {
  const std::uint8_t clock = clock_of_[frame];
  if (clock == kNone) return;
  remove(frame);
  referenced_[frame].store(0, std::memory_order_relaxed);
  if (!evicted) return;  // a dropped page gets no ghost (Zero's unbuffered(), Listing 3.9)
  GhostList& ghosts = clock == kT1 ? b1_ : b2_;
  ghosts.erase(page);  // not expected: a resident page is in no ghost list
  ghosts.push_back(page);
}

FrameId CarPolicy::pick_victim(const std::function<bool(FrameId)>& evictable) noexcept {
  std::uint64_t examined = 0;
  FrameId victim = kNoFrame;
  FrameId fallback = kNoFrame;  // the last evictable frame looked at
  std::size_t blocked[2] = {0, 0};
  // Without concurrent hits the loop ends within 2c + 1 steps (each step clears a bit, passes
  // a refused frame or finds the victim); the bound only stops hits racing the hand forever.
  const std::size_t max_steps = 4 * c_ + 4;
  for (std::size_t step = 0; step < max_steps; ++step) {
    const std::size_t t1 = clocks_[kT1].size;
    const std::size_t t2 = clocks_[kT2].size;
    std::uint8_t clock;
    // Line 4, and Zero's fall-over to the other clock when one is all refused (Listing 3.10
    // lines 112-115 and 169).
    if ((static_cast<double>(t1) >= std::max(1.0, p_) || blocked[kT2] >= t2) && blocked[kT1] < t1) {
      clock = kT1;
    } else if (blocked[kT2] < t2) {
      clock = kT2;
    } else {
      break;
    }
    const FrameId x = clocks_[clock].hand;
    ++examined;
    if (!evictable(x)) {
      clocks_[clock].hand = next_[x];  // keeps its clock, place and bit
      ++blocked[clock];
      continue;
    }
    fallback = x;
    if (referenced_[x].load(std::memory_order_relaxed) == 0) {
      victim = x;  // lines 6-8 and 16-18: removed by on_evict()
      break;
    }
    referenced_[x].store(0, std::memory_order_relaxed);
    if (clock == kT1) {
      // Line 11-12 only move T1's hand, but the algorithm's own prose ("the reference of a
      // page ... managed in B1 or T1 results in the page getting added to T2"), Zero
      // (Listing 3.10 line 141, switch_head_to_tail(T_1, T_2)) and [BM04] move a referenced
      // T1 page to the tail of T2. We do that.
      remove(x);
      add_tail(kT2, x);
    } else {
      clocks_[kT2].hand = next_[x];  // lines 21-22
    }
  }
  if (victim == kNoFrame) victim = fallback;  // the step bound ran out (racing hits)
  examined_.fetch_add(examined, std::memory_order_relaxed);
  return victim;
}

std::uint64_t CarPolicy::frames_examined() const noexcept {
  return examined_.load(std::memory_order_relaxed);
}

std::vector<std::pair<std::string, std::string>> CarPolicy::state() const {
  char p[32];
  std::snprintf(p, sizeof p, "%.2f", p_);
  return {{"car_p", p},
          {"car_t1", std::to_string(clocks_[kT1].size)},
          {"car_t2", std::to_string(clocks_[kT2].size)},
          {"car_b1", std::to_string(b1_.size())},
          {"car_b2", std::to_string(b2_.size())}};
}

}  // namespace pmcached::buffer

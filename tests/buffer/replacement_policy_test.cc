#include "engine/buffer/replacement_policy.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace pmcached::buffer {
namespace {

const auto kAll = [](FrameId) { return true; };

// Loads page 100 + f into frame f for every frame.
void fill(ReplacementPolicy& policy, std::size_t frames) {
  for (FrameId f = 0; f < frames; ++f) policy.on_load(f, 100 + f);
}

// Evicts the victim `policy` picks and loads `page` into its frame, as a buffer manager would.
FrameId replace(ReplacementPolicy& policy, PageId old_page, PageId page) {
  const FrameId victim = policy.pick_victim(kAll);
  if (victim != kNoFrame) {
    policy.on_evict(victim, old_page, true);
    policy.on_load(victim, page);
  }
  return victim;
}

TEST(ClockPolicyTest, SweepClearsBitsAndTakesTheFirstClearFrame) {
  auto clock = make_replacement_policy(EvictionKind::kClock, 4);
  EXPECT_EQ(clock->kind(), EvictionKind::kClock);
  fill(*clock, 4);
  clock->on_hit(0);
  clock->on_hit(1);
  clock->on_hit(3);
  // Hand at 0: frame 0 bit set -> clear; 1 set -> clear; 2 clear -> victim 2.
  EXPECT_EQ(clock->pick_victim(kAll), 2u);
  clock->on_evict(2, 102, true);
  clock->on_load(2, 200);
  // Hand at 3: 3 set -> clear; 0 clear (cleared above) -> victim 0.
  EXPECT_EQ(clock->pick_victim(kAll), 0u);
  EXPECT_EQ(clock->frames_examined(), 5u);
}

TEST(ClockPolicyTest, AllReferencedTakesTheFrameUnderTheHandAfterOneTurn) {
  auto clock = make_replacement_policy(EvictionKind::kClock, 3);
  fill(*clock, 3);
  for (FrameId f = 0; f < 3; ++f) clock->on_hit(f);
  // One turn clears 0, 1, 2; the second turn finds 0 clear.
  EXPECT_EQ(replace(*clock, 100, 300), 0u);
  EXPECT_EQ(clock->frames_examined(), 4u);
}

TEST(ClockPolicyTest, UnevictableFrameKeepsItsBit) {
  auto clock = make_replacement_policy(EvictionKind::kClock, 3);
  fill(*clock, 3);
  clock->on_hit(0);
  // Frame 0 is refused: the hand passes it without clearing; 1 is clear -> victim 1.
  EXPECT_EQ(clock->pick_victim([](FrameId f) { return f != 0; }), 1u);
  // Frame 0 still has its bit: with everything evictable the hand (now at 2) takes 2, then
  // clears 0 and takes 1 (still resident: the buffer manager did not evict it).
  EXPECT_EQ(clock->pick_victim(kAll), 2u);
  EXPECT_EQ(clock->pick_victim(kAll), 1u);
}

TEST(ClockPolicyTest, NothingEvictableGivesNoFrame) {
  auto clock = make_replacement_policy(EvictionKind::kClock, 4);
  fill(*clock, 4);
  EXPECT_EQ(clock->pick_victim([](FrameId) { return false; }), kNoFrame);
  // One turn over 4 resident frames, none evictable.
  EXPECT_EQ(clock->frames_examined(), 4u);
  auto empty = make_replacement_policy(EvictionKind::kClock, 4);
  EXPECT_EQ(empty->pick_victim(kAll), kNoFrame);
}

TEST(ClockPolicyTest, FreeFramesAreNotVictims) {
  auto clock = make_replacement_policy(EvictionKind::kClock, 4);
  clock->on_load(2, 7);
  EXPECT_EQ(clock->pick_victim(kAll), 2u);
  clock->on_evict(2, 7, false);
  EXPECT_EQ(clock->pick_victim(kAll), kNoFrame);
}

}  // namespace
}  // namespace pmcached::buffer

// The five replacement policies: scripted reference strings whose victims follow from each
// policy's definition (worked out in the comments), unevictable frames, CAR's adaptation and
// ghost trimming, RANDOM's seed, and on_hit() racing pick_victim().
#include "engine/buffer/replacement_policy.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine/buffer/car_policy.h"
#include "engine/buffer/gclock_policy.h"

namespace pmcached::buffer {
namespace {

const auto kAll = [](FrameId) { return true; };
const auto kNone = [](FrameId) { return false; };

// Loads page 100 + f into frame f for every frame.
void fill(ReplacementPolicy& policy, std::size_t frames) {
  for (FrameId f = 0; f < frames; ++f) policy.on_load(f, 100 + f);
}

// ---- CLOCK ----

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
  EXPECT_EQ(clock->pick_victim(kAll), 0u);
  EXPECT_EQ(clock->frames_examined(), 4u);
}

TEST(ClockPolicyTest, UnevictableFrameKeepsItsBit) {
  auto clock = make_replacement_policy(EvictionKind::kClock, 3);
  fill(*clock, 3);
  clock->on_hit(0);
  // Frame 0 is refused: the hand passes it without clearing; 1 is clear -> victim 1.
  EXPECT_EQ(clock->pick_victim([](FrameId f) { return f != 0; }), 1u);
  // Frame 0 still has its bit: with everything evictable the hand (now at 2) takes 2, then
  // clears 0 and takes 1 (still resident: the buffer manager did not evict it). Had the
  // refusal cleared 0's bit, the third pick would be 0.
  EXPECT_EQ(clock->pick_victim(kAll), 2u);
  EXPECT_EQ(clock->pick_victim(kAll), 1u);
}

TEST(ClockPolicyTest, FreeFramesAreNotVictims) {
  auto clock = make_replacement_policy(EvictionKind::kClock, 4);
  clock->on_load(2, 7);
  EXPECT_EQ(clock->pick_victim(kAll), 2u);
  clock->on_evict(2, 7, false);
  EXPECT_EQ(clock->pick_victim(kAll), kNoFrame);
}

// ---- GCLOCK ----

TEST(GClockPolicyTest, HitSetsTheCountToKRatherThanIncrementing) {
  GClockPolicy gclock(2, /*k=*/2);
  fill(gclock, 2);
  for (int i = 0; i < 5; ++i) gclock.on_hit(0);  // count 2 (set), not 10 (incremented)
  gclock.on_hit(1);                              // count 2
  // Hand at 0: 0: 2->1, 1: 2->1, 0: 1->0, 1: 1->0, 0: 0 -> victim 0 (5 frames looked at).
  // Were hits added up, 0 would have 10 and the victim would be 1.
  EXPECT_EQ(gclock.pick_victim(kAll), 0u);
  EXPECT_EQ(gclock.frames_examined(), 5u);
}

TEST(GClockPolicyTest, NewPageStartsAtZeroAndHandDecrementsByOne) {
  auto gclock = make_replacement_policy(EvictionKind::kGClock, 3);
  EXPECT_EQ(gclock->kind(), EvictionKind::kGClock);
  fill(*gclock, 3);
  gclock->on_hit(0);  // k = 10
  // Hand at 0: 0: 10->9; 1: count 0 -> victim 1.
  EXPECT_EQ(gclock->pick_victim(kAll), 1u);
  gclock->on_evict(1, 101, true);
  gclock->on_load(1, 201);  // starts at 0
  gclock->on_hit(1);        // 10
  // Hand at 2: count 0 -> victim 2.
  EXPECT_EQ(gclock->pick_victim(kAll), 2u);
  gclock->on_evict(2, 102, true);
  gclock->on_load(2, 202);
  gclock->on_hit(2);  // 10; now 0 has 9, 1 and 2 have 10
  // Hand at 0: 0 reaches 0 first (9 decrements, then taken on the 10th turn): victim 0 after
  // 9 full turns of 3 frames plus one look = 28 frames.
  const std::uint64_t before = gclock->frames_examined();
  EXPECT_EQ(gclock->pick_victim(kAll), 0u);
  EXPECT_EQ(gclock->frames_examined() - before, 28u);
}

TEST(GClockPolicyTest, UnevictableFrameIsNotDecremented) {
  GClockPolicy gclock(2, /*k=*/2);
  fill(gclock, 2);
  gclock.on_hit(0);
  gclock.on_hit(1);
  // Frame 0 refused three times (stays 2); 1: 2->1, 1->0, then victim 1.
  EXPECT_EQ(gclock.pick_victim([](FrameId f) { return f != 0; }), 1u);
  // Hand at 0 (past 1). 0 still has 2: 2->1, then 1 (count 0, not evicted) -> victim 1.
  // Had the refusals decremented it, 0 would be at 0 and the victim.
  EXPECT_EQ(gclock.pick_victim(kAll), 1u);
}

// ---- RANDOM ----

TEST(RandomPolicyTest, SameSeedSameVictimsOtherSeedOthers) {
  auto run = [](std::uint64_t seed) {
    auto random = make_replacement_policy(EvictionKind::kRandom, 64, seed);
    fill(*random, 64);
    std::vector<FrameId> victims;
    for (PageId page = 1000; page < 1100; ++page) {
      const FrameId victim = random->pick_victim(kAll);
      victims.push_back(victim);
      random->on_evict(victim, 0, true);
      random->on_load(victim, page);
    }
    return victims;
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7), run(8));
}

TEST(RandomPolicyTest, SweepTakesTheFirstEvictableFrameFromARandomStart) {
  auto random = make_replacement_policy(EvictionKind::kRandom, 8, 42);
  EXPECT_EQ(random->kind(), EvictionKind::kRandom);
  fill(*random, 8);
  // Only 3 and 6 may go. A sweep from a uniform start takes 3 from starts 7, 0, 1, 2, 3 (5/8)
  // and 6 from 4, 5, 6 (3/8); redrawing until an evictable frame came up would give 1/2 each.
  int threes = 0;
  int sixes = 0;
  constexpr int kPicks = 4000;
  for (int i = 0; i < kPicks; ++i) {
    const FrameId victim = random->pick_victim([](FrameId f) { return f == 3 || f == 6; });
    ASSERT_TRUE(victim == 3 || victim == 6) << victim;
    (victim == 3 ? threes : sixes) += 1;
  }
  EXPECT_NEAR(static_cast<double>(threes) / kPicks, 5.0 / 8, 0.04);
  EXPECT_NEAR(static_cast<double>(sixes) / kPicks, 3.0 / 8, 0.04);
  // No frame is looked at twice in one sweep.
  EXPECT_LE(random->frames_examined(), 4u * kPicks);
}

// ---- LRU ----

TEST(LruPolicyTest, HitMovesTheFrameToTheMruEnd) {
  auto lru = make_replacement_policy(EvictionKind::kLru, 3);
  EXPECT_EQ(lru->kind(), EvictionKind::kLru);
  fill(*lru, 3);   // LRU order 0, 1, 2
  lru->on_hit(0);  // 1, 2, 0
  EXPECT_EQ(lru->pick_victim(kAll), 1u);
  lru->on_evict(1, 101, true);
  lru->on_load(1, 201);  // 2, 0, 1
  lru->on_hit(2);        // 0, 1, 2
  EXPECT_EQ(lru->pick_victim(kAll), 0u);
}

TEST(LruPolicyTest, UnevictableFrameKeepsItsPlace) {
  auto lru = make_replacement_policy(EvictionKind::kLru, 3);
  fill(*lru, 3);  // 0, 1, 2
  EXPECT_EQ(lru->pick_victim([](FrameId f) { return f != 0; }), 1u);
  EXPECT_EQ(lru->frames_examined(), 2u);
  // 0 is still least recently used.
  EXPECT_EQ(lru->pick_victim(kAll), 0u);
}

// ---- CAR ----

TEST(CarPolicyTest, ReferencedT1FrameMovesToT2AndTheFirstClearOneGoes) {
  CarPolicy car(4);
  fill(car, 4);  // T1 = 0, 1, 2, 3 (hand at 0), all bits clear
  car.on_hit(0);
  car.on_hit(2);
  // |T1| = 4 >= max(1, p = 0): sweep T1. 0 referenced -> clear, to T2's tail; 1 clear -> victim.
  EXPECT_EQ(car.pick_victim(kAll), 1u);
  EXPECT_TRUE(car.in_t2(0));
  EXPECT_FALSE(car.in_t2(2));
  car.on_evict(1, 101, true);  // B1 = {101}
  EXPECT_EQ(car.t1_size(), 2u);
  EXPECT_EQ(car.t2_size(), 1u);
  EXPECT_EQ(car.b1_size(), 1u);
  // Page 101 comes back: a B1 ghost hit, into T2.
  car.on_load(1, 101);
  EXPECT_TRUE(car.in_t2(1));
  EXPECT_EQ(car.b1_size(), 0u);
  EXPECT_DOUBLE_EQ(car.p(), 1.0);  // 0 + max(1, |B2| / |B1| = 0 / 1)
}

TEST(CarPolicyTest, VictimComesFromT2WhenT1IsBelowItsTarget) {
  CarPolicy car(4);
  fill(car, 4);  // pages 100..103
  // Three ghost hits from B1: each evicts a T1 page and loads it back, p = 1, 2, 3.
  for (FrameId f = 0; f < 3; ++f) {
    car.on_evict(f, 100 + f, true);
    car.on_load(f, 100 + f);
  }
  EXPECT_DOUBLE_EQ(car.p(), 3.0);
  // T1 = {3}, T2 = {0, 1, 2}: |T1| = 1 < max(1, 3), so T2's hand (at 0, clear) gives the victim.
  EXPECT_EQ(car.pick_victim(kAll), 0u);
  car.on_evict(0, 100, true);
  EXPECT_EQ(car.b2_size(), 1u);
}

TEST(CarPolicyTest, PAdaptsByTheGhostListRatio) {
  CarPolicy car(8);
  fill(car, 8);  // frame f holds page 100 + f, all in T1
  // B1 = {100, 101, 102}, then all three return (B1 hits with |B2| = 0): p = 1, 2, 3.
  for (FrameId f = 0; f < 3; ++f) car.on_evict(f, 100 + f, true);
  for (FrameId f = 0; f < 3; ++f) car.on_load(f, 100 + f);
  EXPECT_DOUBLE_EQ(car.p(), 3.0);
  // Evict them again from T2: B2 = {100, 101, 102}. Evict 103, 104 from T1: B1 = {103, 104}.
  for (FrameId f = 0; f < 5; ++f) car.on_evict(f, 100 + f, true);
  ASSERT_EQ(car.b1_size(), 2u);
  ASSERT_EQ(car.b2_size(), 3u);
  // B1 hit: p = min(3 + max(1, 3 / 2), 8) = 4.5.
  car.on_load(3, 103);
  EXPECT_DOUBLE_EQ(car.p(), 4.5);
  // B2 hit with |B1| = 1, |B2| = 3: p = max(4.5 - max(1, 1 / 3), 0) = 3.5.
  car.on_load(0, 100);
  EXPECT_DOUBLE_EQ(car.p(), 3.5);
  // Evict 105, 106, 107 from T1: B1 = {104, 105, 106, 107}, B2 = {101, 102}.
  for (FrameId f = 5; f < 8; ++f) car.on_evict(f, 100 + f, true);
  ASSERT_EQ(car.b1_size(), 4u);
  ASSERT_EQ(car.b2_size(), 2u);
  // B2 hit: p = max(3.5 - max(1, 4 / 2), 0) = 1.5; again with |B2| = 1: max(1.5 - 4, 0) = 0.
  car.on_load(1, 101);
  EXPECT_DOUBLE_EQ(car.p(), 1.5);
  car.on_load(2, 102);
  EXPECT_DOUBLE_EQ(car.p(), 0.0);
}

TEST(CarPolicyTest, PNeverExceedsTheFrameCount) {
  CarPolicy car(2);
  fill(car, 2);
  for (FrameId f = 0; f < 2; ++f) car.on_evict(f, 100 + f, true);
  for (FrameId f = 0; f < 2; ++f) car.on_load(f, 100 + f);  // p = 1, 2
  car.on_evict(0, 100, true);                               // B2 = {100}
  car.on_load(0, 300);                                      // T1 = {0}
  car.on_evict(0, 300, true);                               // B1 = {300}
  car.on_load(0, 300);                                      // p = min(2 + max(1, 1 / 1), 2) = 2
  EXPECT_DOUBLE_EQ(car.p(), 2.0);
}

TEST(CarPolicyTest, GhostTrimmingDropsTheLeastRecentlyEvictedB1Page) {
  CarPolicy car(3);
  fill(car, 3);                // T1 = {0: 100, 1: 101, 2: 102}
  car.on_evict(0, 100, true);  // B1 = {100}
  car.on_evict(1, 101, true);  // B1 = {100, 101}
  // A new page with |T1| + |B1| = 1 + 2 = c: REMOVE_NEXT(B1) drops 100, the older ghost.
  car.on_load(0, 200);
  EXPECT_EQ(car.b1_size(), 1u);
  // 101 is still a ghost (its return is a B1 hit, into T2); 100 is not (B1 is empty now).
  car.on_load(1, 101);
  EXPECT_TRUE(car.in_t2(1));
  EXPECT_EQ(car.b1_size(), 0u);
}

TEST(CarPolicyTest, UnevictableFrameKeepsItsClockAndBit) {
  CarPolicy car(2);
  fill(car, 2);  // T1 = {0, 1}
  car.on_hit(0);
  // 0 refused: passed with its bit and in T1; 1 clear -> victim 1 (not evicted after all).
  EXPECT_EQ(car.pick_victim([](FrameId f) { return f != 0; }), 1u);
  EXPECT_FALSE(car.in_t2(0));
  // Now 1 is refused: T1's hand (at 1) passes it, reaches 0, finds its bit still set -> clear,
  // move to T2; T1 is all refused, so T2 is swept: 0 is clear -> victim 0, in T2. Had the
  // first refusal cleared 0's bit, 0 would have been taken from T1.
  EXPECT_EQ(car.pick_victim([](FrameId f) { return f != 1; }), 0u);
  EXPECT_TRUE(car.in_t2(0));
}

// Drives CAR as a buffer manager would over a skewed reference string and checks at every
// miss that the ghost lists were trimmed as Algorithm 3.3 lines 7-10 say, and CAR's invariants
// |T1| + |B1| <= c and |T1| + |T2| + |B1| + |B2| <= 2c. Both trims must occur.
TEST(CarPolicyTest, GhostTrimmingKeepsTheInvariantsOnARandomString) {
  constexpr std::size_t kFrames = 16;
  CarPolicy car(kFrames);
  std::vector<FrameId> frame_of(200, kNoFrame);
  std::vector<PageId> page_in(kFrames, kNoPage);
  std::mt19937_64 rng(5);
  std::geometric_distribution<int> skew(0.03);
  std::size_t used = 0;
  int b1_trims = 0;
  int b2_trims = 0;
  for (int i = 0; i < 20000; ++i) {
    const PageId page = 1 + static_cast<PageId>(skew(rng)) % 199;
    if (frame_of[page] != kNoFrame) {
      car.on_hit(frame_of[page]);
      continue;
    }
    FrameId frame = static_cast<FrameId>(used);
    if (used == kFrames) {
      frame = car.pick_victim(kAll);
      ASSERT_NE(frame, kNoFrame);
      car.on_evict(frame, page_in[frame], true);
      frame_of[page_in[frame]] = kNoFrame;
    } else {
      ++used;
    }
    const std::size_t t1 = car.t1_size();
    const std::size_t t2 = car.t2_size();
    const std::size_t b1 = car.b1_size();
    const std::size_t b2 = car.b2_size();
    car.on_load(frame, page);
    frame_of[page] = frame;
    page_in[frame] = page;
    const std::size_t t1_after = car.t1_size();
    if (t1_after == t1 + 1) {  // a page new to CAR went into T1
      if (t1 + b1 >= kFrames) {
        EXPECT_EQ(car.b1_size(), b1 - 1);
        ++b1_trims;
      } else if (t1 + t2 + b1 + b2 >= 2 * kFrames) {
        EXPECT_EQ(car.b2_size(), b2 - 1);
        ++b2_trims;
      } else {
        EXPECT_EQ(car.b1_size() + car.b2_size(), b1 + b2);
      }
    } else {  // a ghost hit: into T2, one ghost fewer
      EXPECT_EQ(car.t2_size(), t2 + 1);
      EXPECT_EQ(car.b1_size() + car.b2_size(), b1 + b2 - 1);
    }
    ASSERT_LE(car.t1_size() + car.b1_size(), kFrames);
    ASSERT_LE(car.t1_size() + car.t2_size() + car.b1_size() + car.b2_size(), 2 * kFrames);
    ASSERT_GE(car.p(), 0.0);
    ASSERT_LE(car.p(), static_cast<double>(kFrames));
  }
  EXPECT_GT(b1_trims, 0);
  EXPECT_GT(b2_trims, 0);
}

// ---- every policy ----

class EveryPolicyTest : public ::testing::TestWithParam<EvictionKind> {};

TEST_P(EveryPolicyTest, NothingEvictableGivesNoFrameAfterABoundedSweep) {
  constexpr std::size_t kFrames = 16;
  auto policy = make_replacement_policy(GetParam(), kFrames);
  EXPECT_EQ(policy->kind(), GetParam());
  EXPECT_EQ(policy->pick_victim(kAll), kNoFrame);  // empty pool
  fill(*policy, kFrames);
  for (FrameId f = 0; f < kFrames; ++f) policy->on_hit(f);
  EXPECT_EQ(policy->pick_victim(kNone), kNoFrame);
  EXPECT_LE(policy->frames_examined(), 2 * kFrames);
  EXPECT_FALSE(policy->state().empty());
}

// A buffer-manager-like run: victims are resident, accepted by `evictable`, and found
// whenever some resident frame is evictable.
TEST_P(EveryPolicyTest, PicksOnlyResidentEvictableFrames) {
  constexpr std::size_t kFrames = 32;
  auto policy = make_replacement_policy(GetParam(), kFrames, 3);
  std::vector<FrameId> frame_of(400, kNoFrame);
  std::vector<PageId> page_in(kFrames, kNoPage);
  std::vector<bool> pinned(kFrames, false);
  std::mt19937_64 rng(9);
  std::size_t used = 0;
  for (int i = 0; i < 5000; ++i) {
    const PageId page = 1 + rng() % 399;
    const FrameId pin = static_cast<FrameId>(rng() % kFrames);
    pinned[pin] = !pinned[pin];
    if (frame_of[page] != kNoFrame) {
      policy->on_hit(frame_of[page]);
      continue;
    }
    FrameId frame = static_cast<FrameId>(used);
    if (used == kFrames) {
      frame = policy->pick_victim([&](FrameId f) {
        EXPECT_NE(page_in[f], kNoPage) << "looked at a free frame";
        return !pinned[f];
      });
      const bool any_unpinned = std::find(pinned.begin(), pinned.end(), false) != pinned.end();
      if (frame == kNoFrame) {
        ASSERT_FALSE(any_unpinned);
        continue;
      }
      ASSERT_LT(frame, kFrames);
      ASSERT_FALSE(pinned[frame]);
      policy->on_evict(frame, page_in[frame], true);
      frame_of[page_in[frame]] = kNoFrame;
    } else {
      ++used;
    }
    policy->on_load(frame, page);
    frame_of[page] = frame;
    page_in[frame] = page;
  }
}

// on_hit() from two threads while this one evicts and loads (run under TSan).
TEST_P(EveryPolicyTest, HitsRaceEvictions) {
  constexpr std::size_t kFrames = 64;
  auto policy = make_replacement_policy(GetParam(), kFrames, 11);
  fill(*policy, kFrames);
  std::atomic<bool> stop{false};
  auto hitter = [&](std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    while (!stop.load(std::memory_order_relaxed)) {
      policy->on_hit(static_cast<FrameId>(rng() % kFrames));
    }
  };
  std::thread a(hitter, 1);
  std::thread b(hitter, 2);
  std::array<PageId, kFrames> page_in{};
  for (FrameId f = 0; f < kFrames; ++f) page_in[f] = 100 + f;
  for (PageId page = 1000; page < 4000; ++page) {
    const FrameId victim = policy->pick_victim(kAll);
    if (victim >= kFrames) {
      ADD_FAILURE() << "no victim in a full pool of evictable frames";
      break;
    }
    policy->on_evict(victim, page_in[victim], true);
    policy->on_load(victim, page);
    page_in[victim] = page;
  }
  stop.store(true);
  a.join();
  b.join();
  EXPECT_GE(policy->frames_examined(), 3000u);
}

INSTANTIATE_TEST_SUITE_P(Policies, EveryPolicyTest,
                         ::testing::Values(EvictionKind::kRandom, EvictionKind::kClock,
                                           EvictionKind::kGClock, EvictionKind::kCar,
                                           EvictionKind::kLru),
                         [](const ::testing::TestParamInfo<EvictionKind>& param_info) {
                           return std::string(eviction_name(param_info.param));
                         });

}  // namespace
}  // namespace pmcached::buffer

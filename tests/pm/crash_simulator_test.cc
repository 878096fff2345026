// CrashSimulator: what reaches the image, when, and the adversarial snapshot.
#include "engine/pm/crash_simulator.h"

#include <cstring>

#include <gtest/gtest.h>

#include "engine/pm/pm_region.h"

namespace pmcached::pm {
namespace {

constexpr std::size_t kSize = 64 * 1024;

std::uint64_t image_u64(const std::vector<char>& image, std::size_t offset) {
  std::uint64_t v = 0;
  std::memcpy(&v, image.data() + offset, sizeof(v));
  return v;
}

TEST(CrashSimulator, UnflushedStoreIsAbsentFromImage) {
  CrashSimulator sim(kSize);
  auto region = PmRegion::in_memory(kSize, &sim);
  *region->at<std::uint64_t>(128) = 42;
  region->fence();
  EXPECT_EQ(image_u64(sim.image(), 128), 0u);
}

TEST(CrashSimulator, FlushedButNotFencedIsAbsent) {
  CrashSimulator sim(kSize);
  auto region = PmRegion::in_memory(kSize, &sim);
  *region->at<std::uint64_t>(128) = 42;
  region->flush(region->at<std::uint64_t>(128), 8);
  EXPECT_EQ(image_u64(sim.image(), 128), 0u);
  EXPECT_EQ(sim.persistence_points(), 0u);
}

TEST(CrashSimulator, FlushedAndFencedIsPresent) {
  CrashSimulator sim(kSize);
  auto region = PmRegion::in_memory(kSize, &sim);
  *region->at<std::uint64_t>(128) = 42;
  *region->at<std::uint64_t>(200) = 7;  // another line, never flushed
  region->persist(region->at<std::uint64_t>(128), 8);
  EXPECT_EQ(image_u64(sim.image(), 128), 42u);
  EXPECT_EQ(image_u64(sim.image(), 200), 0u);
  EXPECT_EQ(sim.persistence_points(), 1u);
}

TEST(CrashSimulator, FlushCapturesContentAtFlushTime) {
  CrashSimulator sim(kSize);
  auto region = PmRegion::in_memory(kSize, &sim);
  auto* field = region->at<std::uint64_t>(64);
  *field = 1;
  region->flush(field, 8);
  *field = 2;  // stored after the flush: not covered by it
  region->fence();
  EXPECT_EQ(image_u64(sim.image(), 64), 1u);
}

TEST(CrashSimulator, FlushSpanningLinesCapturesEveryLine) {
  CrashSimulator sim(kSize);
  auto region = PmRegion::in_memory(kSize, &sim);
  std::memset(region->base() + 60, 'x', 10);  // bytes 60..69: lines 0 and 1
  region->persist(region->base() + 60, 10);
  EXPECT_EQ(std::memcmp(sim.image().data() + 60, "xxxxxxxxxx", 10), 0);
}

TEST(CrashSimulator, CrashAtSnapshotsExactlyAfterThePoint) {
  for (std::uint64_t k = 1; k <= 5; ++k) {
    CrashSimulator sim(kSize);
    auto region = PmRegion::in_memory(kSize, &sim);
    sim.crash_at(k);
    for (std::uint64_t i = 1; i <= 5; ++i) {
      region->store_u64_persist(region->at<std::uint64_t>(i * 64), i);
    }
    ASSERT_TRUE(sim.crash_image().has_value());
    const std::vector<char>& image = *sim.crash_image();
    for (std::uint64_t i = 1; i <= 5; ++i) {
      EXPECT_EQ(image_u64(image, i * 64), i <= k ? i : 0) << "k=" << k << " i=" << i;
    }
    auto restarted = PmRegion::from_image(image);
    EXPECT_EQ(*restarted->at<std::uint64_t>(k * 64), k);
  }
}

TEST(CrashSimulator, EmptyFenceIsAPersistencePoint) {
  CrashSimulator sim(kSize);
  auto region = PmRegion::in_memory(kSize, &sim);
  region->fence();
  region->fence();
  EXPECT_EQ(sim.persistence_points(), 2u);
}

TEST(CrashSimulator, CrashPointNeverReachedLeavesNoImage) {
  CrashSimulator sim(kSize);
  auto region = PmRegion::in_memory(kSize, &sim);
  sim.crash_at(3);
  region->fence();
  region->fence();
  EXPECT_FALSE(sim.crash_image().has_value());
}

// Writes 64 dirty lines, never flushed, then crashes adversarially at one fence.
std::vector<char> adversarial_image(std::uint64_t seed) {
  CrashSimulator sim(kSize);
  auto region = PmRegion::in_memory(kSize, &sim);
  sim.crash_at(1, true, seed);
  for (std::size_t i = 0; i < 64; ++i) *region->at<std::uint64_t>(i * 64) = i + 1;
  region->fence();
  return *sim.crash_image();
}

TEST(CrashSimulator, AdversarialIncludesSomeDirtyLinesDeterministically) {
  const std::vector<char> a = adversarial_image(7);
  EXPECT_EQ(a, adversarial_image(7));
  std::size_t present = 0;
  for (std::size_t i = 0; i < 64; ++i) {
    const std::uint64_t v = image_u64(a, i * 64);
    EXPECT_TRUE(v == 0 || v == i + 1);
    present += v != 0;
  }
  EXPECT_GT(present, 0u);
  EXPECT_LT(present, 64u);
  EXPECT_NE(a, adversarial_image(8));
}

// Flushes 64 lines, then crashes adversarially at the fence that orders them: the crash falls
// while that fence drains, so each line may or may not have reached PM.
TEST(CrashSimulator, AdversarialCrashMayLoseLinesItsFenceWasOrdering) {
  CrashSimulator sim(kSize);
  auto region = PmRegion::in_memory(kSize, &sim);
  *region->at<std::uint64_t>(0) = 99;
  region->persist(region->at<std::uint64_t>(0), 8);  // point 1: durable before the crash
  sim.crash_at(2, true, 5);
  for (std::size_t i = 1; i <= 64; ++i) {
    *region->at<std::uint64_t>(i * 64) = i;
    region->flush(region->at<std::uint64_t>(i * 64), 8);
  }
  region->fence();
  ASSERT_TRUE(sim.crash_image().has_value());
  const std::vector<char>& image = *sim.crash_image();
  EXPECT_EQ(image_u64(image, 0), 99u);
  std::size_t present = 0;
  for (std::size_t i = 1; i <= 64; ++i) present += image_u64(image, i * 64) == i;
  EXPECT_GT(present, 0u);
  EXPECT_LT(present, 64u);
  // After the crash point the simulator goes on: the fence did drain them.
  EXPECT_EQ(image_u64(sim.image(), 64 * 64), 64u);
}

// A reference published before a fence has ordered its target: some adversarial crash of the
// publishing fence persists the reference without the target.
TEST(CrashSimulator, AdversarialCrashCatchesPublishingBeforeTheTargetIsFenced) {
  bool caught = false;
  for (std::uint64_t seed = 1; seed <= 16 && !caught; ++seed) {
    CrashSimulator sim(kSize);
    auto region = PmRegion::in_memory(kSize, &sim);
    sim.crash_at(1, true, seed);
    *region->at<std::uint64_t>(1024) = 7;                           // the target
    region->flush(region->at<std::uint64_t>(1024), 8);              // flushed, not fenced
    region->store_u64_persist(region->at<std::uint64_t>(0), 1024);  // the reference
    const std::vector<char>& image = *sim.crash_image();
    caught = image_u64(image, 0) == 1024 && image_u64(image, 1024) != 7;
  }
  EXPECT_TRUE(caught);
}

TEST(CrashSimulator, FromImageStartsPersistedAsTheImage) {
  std::vector<char> image(kSize, 0);
  image[100] = 'z';
  CrashSimulator sim(kSize);
  auto region = PmRegion::from_image(image, &sim);
  region->fence();
  EXPECT_EQ(sim.image()[100], 'z');
  EXPECT_EQ(region->base()[100], 'z');
}

TEST(CrashSimulator, SizeMismatchIsRejected) {
  CrashSimulator sim(kSize);
  EXPECT_THROW((void)PmRegion::in_memory(kSize * 2, &sim), std::invalid_argument);
}

}  // namespace
}  // namespace pmcached::pm

// Slab classes: the tables memcached 1.6.18 prints with -vv ("slab class N: chunk size S perslab
// P"), for its defaults and for -f, -n and -o slab_chunk_max variants.
#include "engine/pm/slab_classes.h"

#include <gtest/gtest.h>

namespace pmcached::pm {
namespace {

using Sizes = std::vector<std::uint32_t>;

TEST(SlabClasses, DefaultsAreMemcachedsThirtyNineClasses) {
  const Sizes expected = {96,     120,    152,    192,    240,    304,    384,   480,
                          600,    752,    944,    1184,   1480,   1856,   2320,  2904,
                          3632,   4544,   5680,   7104,   8880,   11104,  13880, 17352,
                          21696,  27120,  33904,  42384,  52984,  66232,  82792, 103496,
                          129376, 161720, 202152, 252696, 315872, 394840, 524288};
  EXPECT_EQ(slab_class_sizes(SlabSettings{}), expected);
}

TEST(SlabClasses, PerSlabIsThePageOverTheChunkSize) {
  // memcached -vv: class 2 120/8738, class 6 304/3449, the last 524288/2.
  const SlabSettings settings;
  const Sizes sizes = slab_class_sizes(settings);
  EXPECT_EQ(settings.page_size / sizes[1], 8738u);
  EXPECT_EQ(settings.page_size / sizes[5], 3449u);
  EXPECT_EQ(settings.page_size / sizes.back(), 2u);
}

TEST(SlabClasses, GrowthFactorTwo) {
  SlabSettings settings;
  settings.growth_factor = 2;
  const Sizes expected = {96,    192,   384,   768,   1536,   3072,  6144,
                          12288, 24576, 49152, 98304, 196608, 524288};
  EXPECT_EQ(slab_class_sizes(settings), expected);
}

TEST(SlabClasses, MinSizeHundredStartsAt152) {
  SlabSettings settings;
  settings.min_size = 100;  // 148, rounded up to 152
  const Sizes sizes = slab_class_sizes(settings);
  ASSERT_EQ(sizes.size(), 37u);
  EXPECT_EQ(sizes.front(), 152u);
  EXPECT_EQ(sizes[1], 192u);
  EXPECT_EQ(sizes.back(), 524288u);
}

TEST(SlabClasses, SmallChunkMaxEndsTheTableEarly) {
  SlabSettings settings;
  settings.chunk_max = 65536;  // memcached -o slab_chunk_max=65536: ... 33904, 42384, 65536
  const Sizes sizes = slab_class_sizes(settings);
  ASSERT_EQ(sizes.size(), 29u);
  EXPECT_EQ(sizes[27], 42384u);
  EXPECT_EQ(sizes.back(), 65536u);
}

TEST(SlabClasses, SmallFactorStopsAtSixtyThreeClasses) {
  SlabSettings settings;
  settings.growth_factor = 1.07;  // memcached: 96, 104, 112, ..., 7504, 8032, then 524288
  const Sizes sizes = slab_class_sizes(settings);
  ASSERT_EQ(sizes.size(), kMaxSlabClasses);
  EXPECT_EQ(sizes[1], 104u);
  EXPECT_EQ(sizes[61], 8032u);
  EXPECT_EQ(sizes.back(), 524288u);
}

TEST(SlabClasses, TinyMinSizeAndLargeFactor) {
  SlabSettings settings;
  settings.min_size = 5;
  settings.growth_factor = 3;
  const Sizes expected = {56, 168, 504, 1512, 4536, 13608, 40824, 122472, 524288};
  EXPECT_EQ(slab_class_sizes(settings), expected);
}

TEST(SlabClasses, RefusesWhatMemcachedRefuses) {
  EXPECT_FALSE(slab_settings_error(SlabSettings{}).has_value());
  SlabSettings factor_one;
  factor_one.growth_factor = 1;
  EXPECT_EQ(slab_settings_error(factor_one), "Factor must be greater than 1");
  SlabSettings no_min;
  no_min.min_size = 0;
  EXPECT_EQ(slab_settings_error(no_min), "Chunk size must be greater than 0");
  SlabSettings uneven;
  uneven.chunk_max = 1000;
  EXPECT_TRUE(slab_settings_error(uneven).has_value());
  SlabSettings too_large;
  too_large.chunk_max = 2u << 20;
  EXPECT_TRUE(slab_settings_error(too_large).has_value());
}

}  // namespace
}  // namespace pmcached::pm

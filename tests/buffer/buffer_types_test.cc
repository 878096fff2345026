#include "engine/buffer/buffer_types.h"

#include <gtest/gtest.h>

namespace pmcached::buffer {
namespace {

TEST(BufferTypesTest, NamesRoundTrip) {
  for (EvictionKind kind : {EvictionKind::kRandom, EvictionKind::kClock, EvictionKind::kGClock,
                            EvictionKind::kCar, EvictionKind::kLru}) {
    EXPECT_EQ(parse_eviction(eviction_name(kind)), kind);
  }
  for (PageTableKind kind : {PageTableKind::kHash, PageTableKind::kSwizzle}) {
    EXPECT_EQ(parse_page_table(page_table_name(kind)), kind);
  }
  EXPECT_FALSE(parse_eviction("arc").has_value());
  EXPECT_FALSE(parse_page_table("").has_value());
}

}  // namespace
}  // namespace pmcached::buffer

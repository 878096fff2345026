// Functional tests of the ART node transitions (no crash): the node type after each step, read
// from the pool with art_node.h, so a test fails if growth or shrinking does not happen at the
// counts art_node.h documents; the invariants are checked after every operation.
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "tests/art/art_cases.h"

namespace pmcached::engine::radix::testing {
namespace {

constexpr std::size_t kPoolBytes = 16u << 20;

class ArtTransitionTest : public ::testing::TestWithParam<ArtCase> {};

TEST_P(ArtTransitionTest, TypesChangeWhereDocumented) {
  const Transition& t = GetParam().transition;
  Harness h(GetParam().engine, kPoolBytes);
  Model model;
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    for (const TypeStep& s : t.steps) {
      if (s.op == i) {
        EXPECT_EQ(radix_type_at(h, s.probe, s.branch), s.before) << "before op " << i;
      }
    }
    if (t.ops[i].put) {
      ASSERT_NE(h.put(t.ops[i].key, model), UpsertStatus::kOutOfMemory);
    } else {
      ASSERT_TRUE(h.del(t.ops[i].key, model)) << "op " << i;
    }
    for (const TypeStep& s : t.steps) {
      if (s.op == i) {
        EXPECT_EQ(radix_type_at(h, s.probe, s.branch), s.after) << "after op " << i;
      }
    }
    ASSERT_EQ(h.check(), "") << "after op " << i;
  }
  EXPECT_EQ(h.contents(), model);
}

INSTANTIATE_TEST_SUITE_P(Art, ArtTransitionTest, ::testing::ValuesIn(art_cases()), art_case_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ArtTransitionTest);

class ArtTypeTest : public ::testing::TestWithParam<std::string> {};

// One node (at byte 6, or the root) grown to 60 children, emptied and grown again: its type
// after every insert and delete is what the bounds of art_node.h imply.
void grow_empty_grow(const std::string& engine, bool root) {
  Harness h(engine, kPoolBytes);
  Model model;
  const auto key = [root](std::uint64_t i) { return root ? root_key(i + 1) : leaf_key(i); };
  const std::string probe = key(0);
  const std::uint32_t branch = root ? 0 : 6;
  std::string type = root ? "n4" : "none";
  unsigned count = 0;
  const auto expect = [&](const char* what, std::uint64_t i) {
    type = type_after(type, count);
    if (!root && count <= 1) type = "none";  // a lone child replaces its node
    if (root && count == 0) return;          // an empty tree: a root node or none
    ASSERT_EQ(radix_type_at(h, probe, branch), type)
        << what << " " << i << ", " << count << " children";
  };
  for (int round = 0; round < 2; ++round) {
    for (std::uint64_t i = 0; i < 60; ++i) {
      ASSERT_EQ(h.put(key(i), model), UpsertStatus::kInserted);
      ++count;
      expect("insert", i);
    }
    ASSERT_EQ(h.check(), "");
    for (std::uint64_t i = 60; i-- > 0;) {
      ASSERT_TRUE(h.del(key(i), model));
      --count;
      expect("delete", i);
    }
    ASSERT_EQ(h.check(), "");
  }
}

TEST_P(ArtTypeTest, ANodeGrowsAndShrinksAtTheDocumentedCounts) {
  grow_empty_grow(GetParam(), /*root=*/false);
}

TEST_P(ArtTypeTest, TheRootGrowsAndShrinksAtTheDocumentedCounts) {
  grow_empty_grow(GetParam(), /*root=*/true);
}

INSTANTIATE_TEST_SUITE_P(Art, ArtTypeTest, ::testing::ValuesIn(art_engines()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ArtTypeTest);

}  // namespace
}  // namespace pmcached::engine::radix::testing

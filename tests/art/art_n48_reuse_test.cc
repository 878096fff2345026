// N48 slot reuse after a crash (seed 002 Algorithm 5): an N48 insert writes and persists the
// child pointer into a free slot, then the index byte that names it. A crash between the two
// leaves a pointer in a slot no index byte names. Free slots are found from the index array, so
// after the restart the next insert must reuse that slot, and nothing may leak.
//
// The node (at byte 6) holds 47 children when the 48th is inserted, so the stale slot is its only
// free slot: the check does not depend on which free slot an engine prefers.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/art/art_node.h"
#include "engine/radix/radix_key.h"
#include "tests/art/art_cases.h"

namespace pmcached::engine::radix::testing {
namespace {

// Slots of the N48 at `offset` that hold a pointer no index byte names.
std::vector<unsigned> stale_slots(Harness& h, std::uint64_t offset) {
  const auto* n = h.region().at<art::Node48>(offset);
  bool named[48] = {};
  for (unsigned b = 0; b < 256; ++b) {
    if (n->index[b] >= 1 && n->index[b] <= 48) named[n->index[b] - 1] = true;
  }
  std::vector<unsigned> out;
  for (unsigned s = 0; s < 48; ++s) {
    if (!named[s] && n->children[s] != 0) out.push_back(s);
  }
  return out;
}

class ArtN48ReuseTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ArtN48ReuseTest, AStalePointerSlotIsReusedAfterACrash) {
  const std::string& engine = GetParam();
  std::vector<Op> ops;
  for (std::uint64_t i = 0; i < 48; ++i) ops.push_back({true, leaf_key(i)});
  Trace trace;
  (void)traced_run(engine, ops, &trace);
  const std::size_t last = ops.size() - 1;
  int stale_points = 0;
  for (std::uint64_t k = trace.begin[last] + 1; k <= trace.end[last]; ++k) {
    pm::CrashSimulator sim(kCrashRegionBytes);
    {
      Harness h(engine, kCrashRegionBytes, &sim);
      sim.crash_at(k);
      (void)run_ops(h, sim, ops);
    }
    ASSERT_TRUE(sim.crash_image().has_value());
    Harness r(engine, *sim.crash_image());
    const std::uint64_t node = radix_node_at(r, leaf_key(0), 6);
    ASSERT_NE(node, 0u);
    ASSERT_EQ(radix_type_at(r, leaf_key(0), 6), "n48");
    const std::vector<unsigned> stale = stale_slots(r, node);
    if (stale.empty()) continue;  // a point before the pointer or after the index byte
    ++stale_points;
    ASSERT_EQ(stale.size(), 1u) << "point " << k;
    const unsigned slot = stale[0];
    // The insert in flight is absent, and its item (unreachable) was not kept by the rebuild.
    EXPECT_EQ(r.restart_problems(), "");
    EXPECT_EQ(r.check(), "") << "point " << k;
    Model model = r.contents();
    EXPECT_EQ(model.size(), 47u);
    EXPECT_EQ(model.count(leaf_key(47)), 0u);
    // Another child: byte 100 of the node.
    ASSERT_EQ(r.put(leaf_key(100), model), UpsertStatus::kInserted);
    ASSERT_EQ(radix_node_at(r, leaf_key(0), 6), node) << "the N48 was replaced, not filled";
    const auto* n = r.region().at<art::Node48>(node);
    EXPECT_EQ(n->index[100], slot + 1) << "point " << k << ": the stale slot was not reused";
    EXPECT_EQ(n->children[slot], radix::leaf_ref(model[leaf_key(100)]));
    EXPECT_TRUE(stale_slots(r, node).empty());
    EXPECT_EQ(r.check(), "") << "point " << k;
    EXPECT_EQ(r.contents(), model);
  }
  EXPECT_GT(stale_points, 0) << "no crash point fell between the pointer and the index write";
}

INSTANTIATE_TEST_SUITE_P(Art, ArtN48ReuseTest, ::testing::ValuesIn(art_engines()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ArtN48ReuseTest);

}  // namespace
}  // namespace pmcached::engine::radix::testing

// The `crash` engine suite (tests/engine/engine_suites.h: every engine registered persistent):
// workloads crashed at EVERY persistence point (plain and adversarial) or, for the large one, at
// random points; see index_crash.h for what is checked after each restart. A deliberately broken
// persist order (engine/pm/fault_injection.h) must be caught.
#include "tests/index/index_crash.h"

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/pm/fault_injection.h"
#include "engine/pm/persistence.h"
#include "tests/engine/engine_suites.h"
#include "tests/index/recovery_crash.h"

namespace pmcached::engine::testing {
namespace {

// Under a sanitizer the large workload is scaled down (it reruns once per crash point).
#ifdef PMCACHED_SANITIZED_BUILD
constexpr int kLargeWorkloadOps = 20000;
#else
constexpr int kLargeWorkloadOps = 100000;
#endif

class IndexCrashTest : public ::testing::TestWithParam<std::string> {};

TEST_P(IndexCrashTest, SplitsAtSeveralDepthsSurviveEveryCrashPoint) {
  EXPECT_EQ(crash_everywhere(GetParam(), split_workload()), 0);
}

TEST_P(IndexCrashTest, DeletesAndCollapsesSurviveEveryCrashPoint) {
  EXPECT_EQ(crash_everywhere(GetParam(), delete_workload()), 0);
}

TEST_P(IndexCrashTest, PrefixKeysSurviveEveryCrashPoint) {
  std::vector<Op> ops = puts({"abc", "a", "ab", "abcd", "abd", "b", "ab"});
  for (const char* k : {"abc", "a", "abd", "ab", "abcd"}) ops.push_back({false, k});
  ops.push_back({true, "a"});
  EXPECT_EQ(crash_everywhere(GetParam(), ops), 0);
}

TEST_P(IndexCrashTest, RandomSmallWorkloadsSurviveEveryCrashPoint) {
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<Op> ops;
    for (int i = 0; i < 30; ++i) {
      std::string key = (rng() % 2 == 0) ? numbered("k", rng() % 12) : be64(rng() % 12 << 20);
      ops.push_back({rng() % 3 != 0, key});
    }
    EXPECT_EQ(crash_everywhere(GetParam(), ops), 0) << "seed " << seed;
  }
}

// A large workload crashed at a handful of random points.
TEST_P(IndexCrashTest, LargeWorkloadSurvivesRandomCrashPoints) {
  std::mt19937_64 rng(99);
  std::vector<Op> ops;
  for (int i = 0; i < kLargeWorkloadOps; ++i) {
    std::string key =
        (rng() % 2 == 0) ? numbered("user:", rng() % 4000) : be64((rng() % 4000) * 0x10001);
    ops.push_back({rng() % 4 != 0, key});
  }
  const PointRange range = traced_run(GetParam(), ops);
  EXPECT_GT(range.last - range.first, ops.size());
  for (int i = 0; i < 4; ++i) {
    const std::uint64_t k = range.first + 1 + rng() % (range.last - range.first);
    EXPECT_EQ(crash_and_check(GetParam(), ops, k, /*adversarial=*/i % 2 == 1), "") << "point " << k;
  }
}

// The simulator must catch an engine that publishes a node before persisting it. The workload
// makes new nodes in every engine (radix nodes and growth; B-tree leaf and root splits); it is
// crashed inside the ops that change the node bytes, where the fault acts. Without the fault those
// ops survive every point, so the failures with the fault are the fault's.
TEST_P(IndexCrashTest, SimulatorCatchesABrokenPersistOrder) {
  const std::vector<Op> ops = leaf_split_workload();
  const std::vector<std::size_t> node_ops = ops_changing_stat(GetParam(), ops, "node_bytes");
  ASSERT_FALSE(node_ops.empty());
  EXPECT_EQ(crash_everywhere(GetParam(), ops, {.quiet = false, .crash_ops = node_ops}), 0)
      << "the workload fails without the fault";
  int failures = 0;
  {
    const pm::FaultScope fault(pm::Fault::kSkipNewNodeFlush);
    failures = crash_everywhere(GetParam(), ops, {.quiet = true, .crash_ops = node_ops});
  }
  EXPECT_GT(failures, 0) << "a commit before the node is persisted went unnoticed";
}

// --- upsert_batch (group commit) ----------------------------------------------------------------

// Keys already there before the batch (some of which it replaces), and the batch: replaces, and
// inserts that push leaves down, split prefixes at several depths and grow one node through its
// types (artcow copies an N4 and an N16 on every insert, so the batch frees nodes it may reuse).
std::vector<Op> batch_prefix() {
  std::vector<Op> ops;
  for (std::uint64_t i = 1; i <= 40; ++i) ops.push_back({true, be64(i * 0x10001)});
  return ops;
}
std::vector<std::string> batch_keys() {
  std::vector<std::string> keys;
  for (std::uint64_t i : {3, 7, 11, 19, 23, 31}) keys.push_back(be64(i * 0x10001));
  for (std::uint64_t v : {0x1122334455667788ull, 0x1122334455667799ull, 0x1122334455660000ull,
                          0x1122330000000000ull, 0x2000000000000000ull, 0x1100000000000000ull,
                          0x3000000000000001ull, 0x3000000000100000ull, 0x3100000000000000ull}) {
    keys.push_back(be64(v));
  }
  for (std::uint64_t j = 1; j <= 18; ++j) keys.push_back(be64(0x5000000000000000ull + (j << 8)));
  return keys;
}

// The prefix, then the batch crashed at persistence point `k` and restarted: every key outside
// the batch as the prefix left it, every key of the batch old or new (each on its own), all new
// once the batch's last point is durable, the invariants and the allocator accounting whole, and
// the tree working after. "" when all hold.
std::string crash_batch(const std::string& engine, std::uint64_t k, bool adversarial,
                        std::uint64_t batch_end) {
  pm::CrashSimulator sim(kCrashRegionBytes);
  Harness h(engine, kCrashRegionBytes, &sim);
  sim.crash_at(k, adversarial, /*seed=*/k * 7919 + 1);
  (void)run_ops(h, sim, batch_prefix());
  const Model old = h.contents();
  Model model = old;
  std::vector<ItemRef> refs;
  const std::vector<std::string> keys = batch_keys();
  h.put_batch(keys, model, refs);
  if (!sim.crash_image()) return "crash point not reached";
  const bool all_durable = sim.durable_point() >= batch_end;
  std::string problems;
  const std::unique_ptr<Harness> restarted = restart_checked(engine, sim, problems);
  if (!restarted) return problems;
  Harness& r = *restarted;
  Model got = r.contents();
  Model expected_rest = old;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto at = got.find(keys[i]);
    const auto was = old.find(keys[i]);
    const bool is_new = at != got.end() && at->second == refs[i];
    const bool is_old =
        was == old.end() ? at == got.end() : at != got.end() && at->second == was->second;
    if (!is_new && !is_old)
      problems += "batch key " + std::to_string(i) + " is neither old nor new; ";
    if (all_durable && !is_new)
      problems += "batch key " + std::to_string(i) + " lost after the batch; ";
    got.erase(keys[i]);
    expected_rest.erase(keys[i]);
  }
  if (got != expected_rest) problems += "a key outside the batch changed; ";
  Model now = r.contents();
  for (int i = 0; i < 12; ++i)
    (void)r.put(numbered("after-", static_cast<std::uint64_t>(i * 37)), now);
  if (r.contents() != now) problems += "contents after the further round; ";
  problems += r.check();
  return problems;
}

TEST_P(IndexCrashTest, ABatchOfUpsertsSurvivesEveryCrashPoint) {
  pm::CrashSimulator sim(kCrashRegionBytes);
  Harness h(GetParam(), kCrashRegionBytes, &sim);
  (void)run_ops(h, sim, batch_prefix());
  const std::uint64_t first = sim.persistence_points();
  Model model = h.contents();
  std::vector<ItemRef> refs;
  h.put_batch(batch_keys(), model, refs);
  const std::uint64_t last = sim.persistence_points();
  ASSERT_GT(last, first);
  for (std::uint64_t k = first + 1; k <= last; ++k) {
    for (bool adversarial : {false, true}) {
      EXPECT_EQ(crash_batch(GetParam(), k, adversarial, last), "")
          << "crash at point " << k << " of " << first + 1 << ".." << last
          << (adversarial ? " (adversarial)" : "");
    }
  }
}

// Group commit: an engine that says so waits once for a batch of replaces, not once per key.
TEST(GroupCommitTest, ABatchOfReplacesFencesOnce) {
  int engines = 0;
  for (const std::string& engine : suites::engines_for("crash")) {
    Harness h(engine, kCrashRegionBytes);
    if (!h.engine().capabilities().group_commit) continue;
    ++engines;
    Model model;
    std::vector<std::string> keys;
    for (std::uint64_t i = 1; i <= 20; ++i) keys.push_back(numbered("user:", i));
    for (const std::string& key : keys) (void)h.put(key, model);
    std::vector<BatchUpsert> batch;
    for (const std::string& key : keys) batch.push_back({key, h.make_item(key)});
    const std::uint64_t fences_before = pm::totals().sum().fences;
    h.engine().upsert_batch(batch);
    EXPECT_EQ(pm::totals().sum().fences - fences_before, 1u) << engine;
    for (const BatchUpsert& entry : batch) {
      EXPECT_EQ(entry.result.status, UpsertStatus::kReplaced) << engine;
      h.free_item(entry.result.previous);
    }
    EXPECT_EQ(h.check(), "") << engine;
  }
  EXPECT_GE(engines, 3) << "wort, woart and artcow commit in groups";
}

INSTANTIATE_ENGINE_SUITE(crash, IndexCrashTest);
ENGINE_SUITES_CHECK(IndexCrashTest)

}  // namespace
}  // namespace pmcached::engine::testing

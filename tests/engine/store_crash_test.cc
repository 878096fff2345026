// The durability contract of the store on every persistent engine (the `crash` engine suite,
// engine_suites.h), proven with the crash
// simulator: a workload of item commands is crashed at every persistence point (plainly and
// adversarially), the pool is reopened from what had reached persistence, and then
//   - every acknowledged command is there, with its exact value and flags;
//   - the command in flight at the crash is wholly present or wholly absent;
//   - the allocator owns exactly the blocks that are reachable (no leak, no double owner).
// A deliberately broken order (records published before they are persisted) must be caught.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/open_store.h"
#include "engine/pm/allocator.h"
#include "engine/pm/crash_simulator.h"
#include "engine/pm/fault_injection.h"
#include "engine/pm/pm_region.h"
#include "tests/engine/engine_suites.h"

namespace pmcached::engine {
namespace {

constexpr std::size_t kPoolSize = 8u << 20;

struct Op {
  enum Kind { kSet, kAppend, kIncr, kDelete, kTouch, kFlushAll } kind;
  std::string key;
  std::string value;
  std::uint32_t flags = 0;
};

struct Value {
  std::string data;
  std::uint32_t flags;
  friend bool operator==(const Value&, const Value&) = default;
};
using Model = std::map<std::string, Value>;

// A small workload that exercises new keys, replaces, prefix keys, appends, counters,
// deletes, touches and a flush.
std::vector<Op> workload() {
  return {
      {Op::kSet, "alpha", "1", 7},
      {Op::kSet, "alphabet", "two", 0},
      {Op::kSet, "a", "x", 1},
      {Op::kSet, "counter", "41", 0},
      {Op::kIncr, "counter", "", 0},
      {Op::kAppend, "alpha", "23", 0},
      {Op::kSet, "alpha", "replaced", 9},
      {Op::kDelete, "a", "", 0},
      {Op::kTouch, "alphabet", "", 0},
      {Op::kSet, "beta", std::string(300, 'b'), 3},
      {Op::kDelete, "alphabet", "", 0},
      {Op::kSet, "a", "back", 2},
      {Op::kFlushAll, "", "", 0},
      {Op::kSet, "after-flush", "kept", 5},
  };
}

// What the store holds after `op` on `model` (the command's acknowledged effect).
void apply(const Op& op, Model& model) {
  switch (op.kind) {
    case Op::kSet: model[op.key] = {op.value, op.flags}; break;
    case Op::kAppend:
      if (model.count(op.key)) model[op.key].data += op.value;
      break;
    case Op::kIncr:
      if (model.count(op.key)) {
        model[op.key].data = std::to_string(std::stoull(model[op.key].data) + 1);
      }
      break;
    case Op::kDelete: model.erase(op.key); break;
    case Op::kTouch: break;
    case Op::kFlushAll: model.clear(); break;
  }
}

// A store opened on a pool region (new, or a crash image) through open_store: pool,
// allocator, heap, engine and store, recovered.
struct Instance {
  std::unique_ptr<OpenStore> opened;
  Store* store;
  pm::Allocator* allocator;

  Instance(std::unique_ptr<pm::PmRegion> region, const std::string& engine, const Clock& clock,
           StoreOptions options = {}) {
    StoreConfig config;
    config.engine = engine;
    config.region = std::move(region);
    config.options = options;
    config.item_share_of_heap = 0.5;
    opened = open_store(std::move(config), clock);
    store = &opened->store();
    allocator = opened->allocator();
    recovery = *opened->recovery();
  }

  std::optional<Value> get(const std::string& key) {
    std::optional<Value> out;
    GetRequest request;
    request.key = key;
    request.bump = false;
    (void)store->get(request, [&](const ItemView& item) {
      out = Value{std::string(item.value), item.client_flags};
    });
    return out;
  }

  void run(const Op& op) {
    switch (op.kind) {
      case Op::kSet:
      case Op::kAppend: {
        StoreRequest request;
        request.mode = op.kind == Op::kSet ? StoreMode::kSet : StoreMode::kAppend;
        request.key = op.key;
        request.value = op.value;
        request.client_flags = op.flags;
        (void)store->store(request);
        break;
      }
      case Op::kIncr: {
        ArithmeticRequest request;
        request.key = op.key;
        (void)store->arithmetic(request);
        break;
      }
      case Op::kDelete: {
        DeleteRequest request;
        request.key = op.key;
        (void)store->remove(request);
        break;
      }
      case Op::kTouch: (void)store->touch(op.key, 0); break;
      case Op::kFlushAll: store->flush_all(0); break;
    }
  }

  // Blocks reachable from the root must be exactly the blocks the allocator holds.
  void expect_exact_ownership() {
    std::uint64_t reachable = 0, blocks = 0;
    store->engine().for_each_block([&](std::uint64_t offset) {
      reachable += allocator->block_size(offset);
      ++blocks;
    });
    store->engine().scan("", [&](std::string_view, ItemRef ref) {
      reachable += allocator->block_size(ref);
      ++blocks;
      return true;
    });
    const pm::AllocatorStats stats = allocator->stats();
    EXPECT_EQ(stats.bytes_in_use, reachable);
    EXPECT_EQ(stats.blocks_in_use, blocks);
  }

  RecoveryReport recovery;
};

// One crash run: crashes at persistence point `point` (adversarially or not), restarts and
// checks the contract, setting `violation` if it broke; false once `point` lies beyond the run.
using CrashRun = std::function<bool(std::uint64_t point, bool adversarial, std::string* violation)>;

// Every persistence point of `run`, crashed plainly and adversarially, keeps the contract.
void expect_every_point_keeps_the_contract(const CrashRun& run) {
  for (const bool adversarial : {false, true}) {
    std::uint64_t point = 1;
    for (; point < 10'000; ++point) {
      std::string violation;
      if (!run(point, adversarial, &violation)) break;
      ASSERT_TRUE(violation.empty()) << "crash at point " << point
                                     << (adversarial ? " (adversarial)" : "") << ": " << violation;
    }
    EXPECT_GT(point, 10u) << "the run should have many persistence points";
  }
}

// Whether a crash at some persistence point of `run` breaks the contract.
bool some_point_breaks_the_contract(const CrashRun& run, bool adversarial) {
  for (std::uint64_t point = 1; point < 10'000; ++point) {
    std::string violation;
    if (!run(point, adversarial, &violation)) return false;
    if (!violation.empty()) return true;
  }
  return false;
}

class StoreCrashTest : public ::testing::TestWithParam<std::string> {
 protected:
  // The workload crashed by crash_and_check() with default options.
  CrashRun workload_run() {
    return [this](std::uint64_t point, bool adversarial, std::string* violation) {
      return crash_and_check(point, adversarial, {}, violation);
    };
  }

  // Runs the workload, crashing after persistence point `point`. Returns false once `point`
  // lies beyond the workload's last persistence point.
  bool crash_and_check(std::uint64_t point, bool adversarial, StoreOptions options,
                       std::string* violation) {
    ManualClock clock;
    pm::CrashSimulator simulator(kPoolSize);
    Instance live(pm::PmRegion::in_memory(kPoolSize, &simulator), GetParam(), clock, options);
    // Points count from the start of the workload (formatting the pool has its own).
    simulator.crash_at(simulator.persistence_points() + point, adversarial, point * 7919 + 1);
    Model acknowledged;
    std::optional<Model> with_in_flight;
    for (const Op& op : workload()) {
      const bool crashed_before = simulator.crash_image().has_value();
      live.run(op);
      if (crashed_before) continue;
      if (!simulator.crash_image()) {
        apply(op, acknowledged);
      } else if (!with_in_flight) {
        with_in_flight = acknowledged;  // the crash fell inside this op
        apply(op, *with_in_flight);
      }
    }
    if (!simulator.crash_image()) return false;

    Instance restarted(pm::PmRegion::from_image(*simulator.crash_image()), GetParam(), clock);
    if (!restarted.recovery.problems.empty()) {
      *violation = "recovery found: " + restarted.recovery.problems.front();
    }
    auto holds = [&](const Model& model) {
      std::set<std::string> keys;
      for (const Op& op : workload()) keys.insert(op.key);
      for (const std::string& key : keys) {
        if (key.empty()) continue;
        const auto it = model.find(key);
        const std::optional<Value> want =
            it == model.end() ? std::nullopt : std::optional<Value>(it->second);
        if (restarted.get(key) != want) return false;
      }
      return true;
    };
    if (!holds(acknowledged) && !(with_in_flight && holds(*with_in_flight))) {
      *violation =
          "state after the crash is neither the acknowledged one nor that plus the "
          "command in flight";
    }
    restarted.expect_exact_ownership();
    // The store keeps working after recovery.
    restarted.run({Op::kSet, "new-after-crash", "v", 0});
    EXPECT_EQ(restarted.get("new-after-crash"), (Value{"v", 0}));
    return true;
  }
};

TEST_P(StoreCrashTest, EveryPersistencePointKeepsTheContract) {
  expect_every_point_keeps_the_contract(workload_run());
}

TEST_P(StoreCrashTest, PublishingBeforePersistingIsCaught) {
  const pm::FaultScope fault(pm::Fault::kSkipRecordPersist);
  EXPECT_TRUE(some_point_breaks_the_contract(workload_run(), /*adversarial=*/false))
      << "the crash simulator did not notice records published unpersisted";
}

// The record is written back with the index's first fence; an index that publishes with its
// first store relies on store_u64_persist() fencing it first (pm_region.h, "Publishing order").
// Without that fence an adversarial crash persists the reference but not the record. NV-Tree
// never relies on it: it appends its entry, fences, and only then publishes by its counter.
TEST_P(StoreCrashTest, PublishingBeforeTheRecordIsFencedIsCaught) {
  const pm::FaultScope fault(pm::Fault::kSkipPublishOrder);
  const bool relies_on_the_fence = GetParam() != "nvtree";
  EXPECT_EQ(some_point_breaks_the_contract(workload_run(), /*adversarial=*/true),
            relies_on_the_fence);
}

// --- store_batch (group commit) ------------------------------------------------------------------

// Sets before the batch, then one batch: replaces, new keys, a key twice (its second request goes
// after the group) and an append (not a plain set: alone, after the group).
std::vector<Op> batch_prefix() {
  return {{Op::kSet, "k1", "one", 1}, {Op::kSet, "k2", "two", 2}, {Op::kSet, "k3", "three", 3}};
}
std::vector<Op> batch_ops() {
  return {{Op::kSet, "k1", "uno", 11},
          {Op::kSet, "k4", "four", 4},
          {Op::kSet, "k2", "dos", 12},
          {Op::kAppend, "k3", "+", 0},
          {Op::kSet, "k5", std::string(200, 'v'), 5},
          {Op::kSet, "k4", "cuatro", 14},
          {Op::kSet, "k6", "six", 6}};
}

// Runs the prefix, the batch and one more set, crashed at `point`: every key the batch does not
// name as the prefix left it; each key it names in one of the states its own requests pass
// through, in order (each key on its own), and in the last once the batch has returned. False
// once `point` lies beyond the run.
bool crash_batch(const std::string& engine, std::uint64_t point, bool adversarial,
                 std::string* violation) {
  ManualClock clock;
  pm::CrashSimulator simulator(kPoolSize);
  Instance live(pm::PmRegion::in_memory(kPoolSize, &simulator), engine, clock);
  simulator.crash_at(simulator.persistence_points() + point, adversarial, point * 7919 + 1);
  Model before;
  for (const Op& op : batch_prefix()) {
    live.run(op);
    apply(op, before);
  }
  const bool crashed_in_prefix = simulator.crash_image().has_value();
  const std::vector<Op> ops = batch_ops();
  std::vector<StoreRequest> requests;
  for (const Op& op : ops) {
    StoreRequest request;
    request.mode = op.kind == Op::kSet ? StoreMode::kSet : StoreMode::kAppend;
    request.key = op.key;
    request.value = op.value;
    request.client_flags = op.flags;
    requests.push_back(request);
  }
  std::vector<StoreOutcome> outcomes(requests.size());
  live.store->store_batch(requests, outcomes);
  const bool crashed_in_batch = simulator.crash_image().has_value();
  live.run({Op::kSet, "after-batch", "x", 0});
  if (!simulator.crash_image()) return false;
  for (const StoreOutcome& outcome : outcomes) {
    if (outcome.status != StoreStatus::kStored) *violation = "a request of the batch failed";
  }

  // Per key, the states its requests pass through.
  std::map<std::string, std::vector<std::optional<Value>>> states;
  for (const Op& op : ops) {
    auto& seq = states[op.key];
    if (seq.empty()) {
      const auto it = before.find(op.key);
      seq.push_back(it == before.end() ? std::nullopt : std::optional<Value>(it->second));
    }
    Model one;
    if (seq.back()) one[op.key] = *seq.back();
    apply(op, one);
    seq.push_back(one.count(op.key) ? std::optional<Value>(one[op.key]) : std::nullopt);
  }
  Instance restarted(pm::PmRegion::from_image(*simulator.crash_image()), engine, clock);
  if (!restarted.recovery.problems.empty()) {
    *violation = "recovery found: " + restarted.recovery.problems.front();
  }
  for (const auto& [key, value] : before) {
    if (!states.count(key) && restarted.get(key) != value) *violation = "key " + key + " changed";
  }
  for (const auto& [key, seq] : states) {
    const std::optional<Value> got = restarted.get(key);
    if (crashed_in_prefix) continue;  // the prefix's own contract is the test above
    if (!crashed_in_batch && got != seq.back()) {
      *violation = "key " + key + " lost what the batch acknowledged";
    } else if (std::find(seq.begin(), seq.end(), got) == seq.end()) {
      *violation = "key " + key + " holds a state none of its requests made";
    }
  }
  restarted.expect_exact_ownership();
  return true;
}

CrashRun batch_run(const std::string& engine) {
  return [engine](std::uint64_t point, bool adversarial, std::string* violation) {
    return crash_batch(engine, point, adversarial, violation);
  };
}

TEST_P(StoreCrashTest, ABatchOfSetsKeepsTheContractAtEveryPoint) {
  expect_every_point_keeps_the_contract(batch_run(GetParam()));
}

// The batch writes its records back itself; without that, a crash must be seen to lose one.
TEST_P(StoreCrashTest, ABatchPublishingBeforePersistingIsCaught) {
  const pm::FaultScope fault(pm::Fault::kSkipRecordPersist);
  EXPECT_TRUE(some_point_breaks_the_contract(batch_run(GetParam()), /*adversarial=*/false))
      << "the crash simulator did not notice records published unpersisted";
}

INSTANTIATE_ENGINE_SUITE(crash, StoreCrashTest);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(StoreCrashTest);

}  // namespace
}  // namespace pmcached::engine

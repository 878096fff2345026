// The redo log's durability contract under the crash simulator. A small workload (appends of
// units spanning several cache lines, group commits, checkpoints, a wrap with padding) is crashed
// at every persistence point, plainly and adversarially; the pool restarts from the crash image
// and the replay must be exactly a run of the appended units, in order, from the checkpoint in
// effect: every unit acknowledged before the crash is there with its exact bytes, none torn or
// twice, and it stops at the first missing one. The restarted log then runs a second workload,
// itself crashed at every point and checked the same way, so the log's continuation after a
// replay (the lap skip) is covered too.
#include <optional>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/buffer/redo_log_harness.h"

namespace pmcached::buffer {
namespace {

using testing::LogInstance;
using testing::make_records;
using testing::Unit;

constexpr std::size_t kLogBytes = 4096;

struct Step {
  enum Kind { kAppend, kCommit, kCheckpoint } kind;
  std::vector<std::size_t> sizes;  // kAppend: record body sizes
  std::size_t unit = 0;            // kCommit, kCheckpoint: at the end of this life's unit
};

Step append(std::vector<std::size_t> sizes) { return {Step::kAppend, std::move(sizes), 0}; }
Step commit(std::size_t unit) { return {Step::kCommit, {}, unit}; }
Step checkpoint(std::size_t unit) { return {Step::kCheckpoint, {}, unit}; }

// Units of 64, 208 (two records), 336, 224, 928, 1232, 1536 (after 1104 bytes of padding: the
// region is 4096), 48 and 96 bytes. The last one is never committed.
std::vector<Step> first_workload() {
  return {append({40}),   append({150, 10}), commit(1),      append({300}), commit(2),
          append({200}),  append({900}),     append({1200}), commit(5),     checkpoint(4),
          append({1500}), append({20}),      commit(7),      checkpoint(6), append({60})};
}

// After a restart: a unit, a commit, two more units (the second may need a checkpoint first to
// find room) and a commit of both.
std::vector<Step> second_workload() {
  return {append({100}), commit(0), append({700}), append({30}), commit(2)};
}

// A persistence-point-stamped event of one life.
struct Mark {
  Lsn lsn = 0;
  std::uint64_t before = 0, after = 0;  // persistence points before and after it
};

// One life of the log: a new pool, or a restart from an image (replayed first), then `steps`.
struct Life {
  std::uint64_t root = 0;
  Lsn start_checkpoint = 0;  // the checkpoint LSN the life started with
  std::vector<Unit> prefix;  // what its replay visited (a restart)
  std::vector<Unit> appended;
  std::vector<std::uint64_t> appended_at;  // persistence points when each unit was written
  std::vector<Mark> commits, checkpoints;
  std::uint64_t first_point = 0, last_point = 0;  // the points the life's work reached
  std::optional<std::vector<char>> crash_image;
  std::vector<char> final_image;  // with keep_image
  std::uint64_t durable_point = 0;

  // Every unit the log knows of, in LSN order.
  [[nodiscard]] std::vector<Unit> chain() const {
    std::vector<Unit> all = prefix;
    all.insert(all.end(), appended.begin(), appended.end());
    return all;
  }
};

struct Crash {
  std::uint64_t point = 0;  // 0: none
  bool adversarial = false;
  std::uint64_t seed = 1;
};

// `keep_image`: copy the image at the end into final_image (4 MiB; most runs need only the
// crash image).
Life run_life(const std::vector<char>* image, std::uint64_t root, const std::vector<Step>& steps,
              const Crash& crash, std::uint32_t tag_base, bool keep_image = false) {
  pm::CrashSimulator sim(testing::kPoolBytes);
  Life life;
  std::optional<LogInstance> inst;
  if (image == nullptr) {
    inst.emplace(LogInstance::fresh(kLogBytes, &sim));
  } else {
    inst.emplace(LogInstance::restart(*image, root, &sim));
  }
  life.root = inst->log->root_offset();
  life.start_checkpoint = inst->log->checkpoint_lsn();
  life.first_point = sim.persistence_points();  // after formatting, or the allocator's rebuild
  if (crash.point != 0) sim.crash_at(crash.point, crash.adversarial, crash.seed);
  if (image != nullptr) life.prefix = inst->replay();
  std::uint32_t tag = tag_base;
  for (const Step& step : steps) {
    const std::uint64_t before = sim.persistence_points();
    switch (step.kind) {
      case Step::kAppend: {
        const Lsn checkpoint = inst->log->checkpoint_lsn();
        life.appended.push_back(inst->append(make_records(tag++, step.sizes)));
        EXPECT_NE(life.appended.back().end, 0u) << "the workload does not fit the log";
        // A checkpoint the append needed to find room.
        if (inst->log->checkpoint_lsn() != checkpoint) {
          life.checkpoints.push_back(
              {inst->log->checkpoint_lsn(), before, sim.persistence_points()});
        }
        life.appended_at.push_back(sim.persistence_points());
        break;
      }
      case Step::kCommit:
        inst->log->commit(life.appended.at(step.unit).end);
        life.commits.push_back({life.appended[step.unit].end, before, sim.persistence_points()});
        break;
      case Step::kCheckpoint:
        inst->log->checkpoint(life.appended.at(step.unit).end);
        life.checkpoints.push_back(
            {life.appended[step.unit].end, before, sim.persistence_points()});
        break;
    }
  }
  life.last_point = sim.persistence_points();
  life.crash_image = sim.crash_image();
  life.durable_point = crash.point == 0 ? life.last_point : sim.durable_point();
  if (keep_image) life.final_image = sim.image();
  return life;
}

// Checks what `next` replayed against the life it restarted from, crashed at `point` (the
// persistence point whose fence was draining, or after which the plain crash fell) with
// `durable` the last point surely in the image. "" when the contract holds.
std::string check(const Life& life, std::uint64_t point, std::uint64_t durable, const Life& next) {
  std::ostringstream out;
  const std::vector<Unit> chain = life.chain();
  const Lsn c = next.start_checkpoint;
  // The checkpoint in effect: the life's own or one that began before the crash, and no older
  // than one that completed.
  bool known = c == life.start_checkpoint;
  Lsn at_least = life.start_checkpoint;
  for (const Mark& m : life.checkpoints) {
    if (m.before < point && m.lsn == c) known = true;
    if (m.after <= durable) at_least = std::max(at_least, m.lsn);
  }
  if (!known || c < at_least) out << "checkpoint LSN " << c << " was never made durable; ";
  std::size_t first = 0;
  while (first < chain.size() && chain[first].end <= c) ++first;
  // Units that may be in the image: the prefix, and units written before the crash's fence.
  std::size_t written = life.prefix.size();
  for (std::uint64_t at : life.appended_at) written += at < point;
  std::size_t acknowledged = life.prefix.size();
  for (std::size_t i = 0; i < life.appended.size(); ++i) {
    for (const Mark& m : life.commits) {
      if (m.after <= durable && m.lsn >= life.appended[i].end) {
        acknowledged = std::max(acknowledged, life.prefix.size() + i + 1);
      }
    }
  }
  const std::vector<Unit>& got = next.prefix;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (first + i >= written || !(got[i] == chain[first + i])) {
      out << "replayed unit " << i << " (end " << got[i].end << ") is not appended unit "
          << first + i << " of the chain; ";
      break;
    }
  }
  if (first + got.size() < acknowledged) {
    out << "replayed " << got.size() << " units from unit " << first << " but " << acknowledged
        << " were acknowledged; ";
  }
  return out.str();
}

struct Counts {
  int crashes = 0;
  int failures = 0;
};

// Restarts from `life`'s crash image, checks the replay, and (if `deeper`) crashes the second
// workload at each of its points and checks those restarts too.
void restart_and_check(const Life& life, const Crash& crash, bool deeper, Counts& counts) {
  const auto report = [&](const std::string& error, const std::string& where) {
    ++counts.crashes;
    if (error.empty()) return;
    ++counts.failures;
    ADD_FAILURE() << where << ": " << error;
  };
  std::ostringstream where;
  where << "crash at point " << crash.point << (crash.adversarial ? " adversarial seed " : "")
        << (crash.adversarial ? std::to_string(crash.seed) : "");
  if (!life.crash_image) {
    ADD_FAILURE() << where.str() << " was never reached";
    return;
  }
  const Life second = run_life(&*life.crash_image, life.root, second_workload(), {}, 100, true);
  report(check(life, crash.point, life.durable_point, second), where.str());
  // The second life completed: a restart from its image replays what it replayed and appended.
  const Life third = run_life(&second.final_image, life.root, {}, {}, 200);
  report(check(second, second.last_point, second.last_point, third),
         where.str() + ", then after the second workload");
  if (!deeper) return;
  for (std::uint64_t k = second.first_point + 1; k <= second.last_point; ++k) {
    for (bool adversarial : {false, true}) {
      const Crash again{k, adversarial, k};
      const Life crashed = run_life(&*life.crash_image, life.root, second_workload(), again, 100);
      if (!crashed.crash_image) {
        ADD_FAILURE() << where.str() << ", then at point " << k << " never reached";
        continue;
      }
      const Life after = run_life(&*crashed.crash_image, life.root, {}, {}, 200);
      report(check(crashed, k, crashed.durable_point, after),
             where.str() + ", then at point " + std::to_string(k) +
                 (adversarial ? " adversarial" : ""));
    }
  }
}

TEST(RedoLogCrash, TheWorkloadWrapsWithPaddingAndCheckpoints) {
  const Life life = run_life(nullptr, 0, first_workload(), {}, 0);
  ASSERT_EQ(life.appended.size(), 9u);
  // Unit 6 (1536 bytes) did not fit before the region's end: padding, then the next lap.
  EXPECT_EQ(life.appended[6].end, kLogBytes + 1536);
  EXPECT_EQ(life.checkpoints.size(), 2u);
  EXPECT_EQ(life.commits.size(), 4u);
  EXPECT_GE(life.last_point - life.first_point, 6u);  // 4 commits, 2 checkpoints
}

TEST(RedoLogCrash, EveryPersistencePointPlainAndAdversarial) {
  const Life reference = run_life(nullptr, 0, first_workload(), {}, 0);
  Counts counts;
  for (std::uint64_t k = reference.first_point + 1; k <= reference.last_point; ++k) {
    for (std::uint64_t seed = 0; seed <= 3; ++seed) {
      const Crash crash{k, seed != 0, seed};
      const Life life = run_life(nullptr, 0, first_workload(), crash, 0);
      // The second workload is crashed everywhere after a plain and one adversarial crash.
      restart_and_check(life, crash, seed <= 1, counts);
    }
  }
  EXPECT_EQ(counts.failures, 0) << "of " << counts.crashes << " crashes";
  EXPECT_GE(counts.crashes, 100);
}

}  // namespace
}  // namespace pmcached::buffer

// RedoLog: round trips across a restart, wrap-around with padding, a full log, group commit
// from several threads, checkpoints, refusing a foreign or corrupt root, and the lap skip that
// keeps a stale unit from being replayed.
#include "engine/buffer/redo_log.h"

#include <cstring>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "engine/pm/persistence.h"
#include "tests/buffer/redo_log_harness.h"

namespace pmcached::buffer {
namespace {

using testing::LogInstance;
using testing::make_records;
using testing::Records;
using testing::Unit;

// The encoded size of a unit of one record of `body` bytes: header, record header, body padded
// to 8, all padded to 16.
std::uint64_t unit_length(std::size_t body) { return (16 + 8 + (body + 7) / 8 * 8 + 15) / 16 * 16; }

TEST(RedoLog, AppendReplayRoundTripAcrossRestart) {
  pm::CrashSimulator sim(testing::kPoolBytes);
  LogInstance a = LogInstance::fresh(64 * 1024, &sim);
  // Empty bodies, bodies of 1..9 bytes around the 8-byte padding, bodies spanning cache lines,
  // a unit of no records and one of several.
  const std::vector<std::vector<std::size_t>> shapes = {
      {0}, {1}, {7, 8, 9}, {}, {300}, {64, 0, 129}, {1000}, {16, 16, 16, 16, 16}};
  std::vector<Unit> units;
  for (std::uint32_t i = 0; i < shapes.size(); ++i)
    units.push_back(a.append(make_records(i, shapes[i])));
  for (const Unit& u : units) ASSERT_NE(u.end, 0u);
  a.log->commit(units.back().end);
  EXPECT_EQ(a.log->durable_lsn(), units.back().end);

  // The restart sees only what reached persistence (the simulator's image).
  LogInstance b = LogInstance::restart(sim.image(), a.log->root_offset());
  EXPECT_EQ(b.replay(), units);
  // Appends continue after the replayed units, and both survive the next restart.
  EXPECT_GT(b.log->end_lsn(), units.back().end);
  EXPECT_EQ(b.log->durable_lsn(), b.log->end_lsn());
  units.push_back(b.append(make_records(99, {50, 500})));
  b.log->commit(units.back().end);
  LogInstance c = LogInstance::restart(b.memory(), b.log->root_offset());
  EXPECT_EQ(c.replay(), units);
}

TEST(RedoLog, UncommittedUnitsAreNotDurable) {
  pm::CrashSimulator sim(testing::kPoolBytes);
  LogInstance a = LogInstance::fresh(64 * 1024, &sim);
  const Unit first = a.append(make_records(1, {100}));
  a.log->commit(first.end);
  (void)a.append(make_records(2, {100}));  // never committed
  LogInstance b = LogInstance::restart(sim.image(), a.log->root_offset());
  EXPECT_EQ(b.replay(), std::vector<Unit>{first});
}

// Several laps of an 8 KiB log with units that do not divide it: padding units at the end of
// every lap, checkpoints freeing space, and a restart after each lap replaying exactly the units
// since the checkpoint.
TEST(RedoLog, WrapsAroundWithPaddingOverSeveralLaps) {
  constexpr std::size_t kLog = 8 * 1024;
  pm::CrashSimulator sim(testing::kPoolBytes);
  auto inst = std::make_unique<LogInstance>(LogInstance::fresh(kLog, &sim));
  const std::vector<std::size_t> sizes = {200, 1000, 50, 1500, 333, 2000, 8};
  std::vector<Unit> since_checkpoint;
  int paddings = 0;
  int checkpoints = 0;
  int restarts = 0;
  std::uint32_t tag = 0;
  Lsn lap_start = 0;
  while (restarts < 4) {
    const Records records = make_records(tag, {sizes[tag % sizes.size()]});
    ++tag;
    const std::vector<LogRecord> v = testing::views(records);
    const Lsn before = inst->log->end_lsn();
    Lsn end = inst->log->append(v);
    if (end == 0) {
      EXPECT_TRUE(inst->log->wants_checkpoint(0.5));
      inst->log->commit(inst->log->end_lsn());
      inst->log->checkpoint(inst->log->durable_lsn());
      ++checkpoints;
      since_checkpoint.clear();
      end = inst->log->append(v);
      ASSERT_NE(end, 0u) << "an empty log refused a unit";
    }
    // A unit that did not fit before the region's end starts at the next lap, after padding.
    const std::uint64_t length = unit_length(sizes[(tag - 1) % sizes.size()]);
    if (end - length != before) {
      EXPECT_EQ((end - length) % kLog, 0u);
      EXPECT_GT(length, kLog - before % kLog) << "padded although the unit fit";
      ++paddings;
    }
    since_checkpoint.push_back({end, records});
    if (end / kLog > lap_start / kLog) {
      // A lap completed: restart from what is persisted and check the replay.
      inst->log->commit(end);
      const std::uint64_t root = inst->log->root_offset();
      const std::vector<char> image = sim.image();
      inst.reset();
      inst = std::make_unique<LogInstance>(LogInstance::restart(image, root, &sim));
      ASSERT_EQ(inst->replay(), since_checkpoint) << "restart " << restarts;
      lap_start = inst->log->end_lsn();
      ++restarts;
    }
  }
  EXPECT_GE(paddings, 3);
  EXPECT_GE(checkpoints, 2);
}

TEST(RedoLog, AppendReturnsZeroWhenFullUntilACheckpoint) {
  LogInstance a = LogInstance::fresh(4096);
  const Records records = make_records(1, {100});  // 128-byte units
  const std::vector<LogRecord> v = testing::views(records);
  Lsn last = 0;
  int appended = 0;
  for (Lsn end; (end = a.log->append(v)) != 0; last = end) ++appended;
  EXPECT_EQ(appended, 4096 / 128);
  EXPECT_EQ(a.log->end_lsn(), last);  // the refused append moved nothing
  EXPECT_EQ(a.log->stats().used_bytes, 4096u);
  EXPECT_TRUE(a.log->wants_checkpoint());
  a.log->commit(last);
  a.log->checkpoint(last);
  EXPECT_EQ(a.log->stats().used_bytes, 0u);
  EXPECT_NE(a.log->append(v), 0u);
}

TEST(RedoLog, UnitLargerThanHalfTheRegionThrows) {
  LogInstance a = LogInstance::fresh(8192);
  // 16 (unit header) + 8 (record header) + body: exactly half the region fits.
  EXPECT_NE(a.log->append(testing::views(make_records(1, {4096 - 24}))), 0u);
  const Lsn end = a.log->end_lsn();
  const Records too_big = make_records(2, {4096 - 24 + 1});
  EXPECT_THROW((void)a.log->append(testing::views(too_big)), RedoLogError);
  EXPECT_EQ(a.log->end_lsn(), end);
}

// Several threads append and commit; every commit returns with its unit durable, flushes are
// shared (never more rounds than commits), and a restart replays every unit once, in order.
TEST(RedoLog, GroupCommitFromSeveralThreads) {
  constexpr int kThreads = 4;
  constexpr int kUnitsPerThread = 250;
  LogInstance a = LogInstance::fresh(1 << 20);
  const pm::OpCounters log_before =
      pm::totals().by_kind[static_cast<std::size_t>(pm::OpKind::kLog)];
  std::vector<std::thread> threads;
  std::atomic<int> not_durable{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kUnitsPerThread; ++i) {
        const Records records =
            make_records(static_cast<std::uint32_t>(t * 1000 + i), {std::size_t(24 + i % 50)});
        const Lsn end = a.log->append(testing::views(records));
        a.log->commit(end);
        if (end == 0 || a.log->durable_lsn() < end) not_durable.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(not_durable.load(), 0);
  const RedoLogStats s = a.log->stats();
  EXPECT_EQ(s.units, std::uint64_t{kThreads * kUnitsPerThread});
  EXPECT_EQ(s.commits, std::uint64_t{kThreads * kUnitsPerThread});
  EXPECT_GE(s.group_flushes, 1u);
  EXPECT_LE(s.group_flushes, s.commits);
  // One fence per group flush, counted as the log's.
  const pm::OpCounters log_after = pm::totals().by_kind[static_cast<std::size_t>(pm::OpKind::kLog)];
  EXPECT_EQ(log_after.fences - log_before.fences, s.group_flushes);
  EXPECT_EQ(a.log->durable_lsn(), a.log->end_lsn());

  LogInstance b = LogInstance::restart(a.memory(), a.log->root_offset());
  const std::vector<Unit> replayed = b.replay();
  ASSERT_EQ(replayed.size(), std::size_t{kThreads * kUnitsPerThread});
  std::map<int, int> next_of_thread;
  for (std::size_t i = 0; i < replayed.size(); ++i) {
    if (i > 0) {
      EXPECT_GT(replayed[i].end, replayed[i - 1].end);
    }
    const int tag = replayed[i].records.at(0).first / 16;
    const int t = tag / 1000;
    const int seq = tag % 1000;
    EXPECT_EQ(seq, next_of_thread[t]++) << "thread " << t << " out of order or twice";
    EXPECT_EQ(replayed[i].records,
              make_records(static_cast<std::uint32_t>(tag), {std::size_t(24 + seq % 50)}));
  }
}

// Threads append and commit in a log small enough that they must checkpoint, each on its own,
// while the others append and commit (TSan checks the three against each other). A restart
// replays the units after the last checkpoint, each thread's in its order.
TEST(RedoLog, CheckpointsWhileOthersAppendAndCommit) {
  constexpr int kThreads = 3;
  constexpr int kUnitsPerThread = 200;
  LogInstance a = LogInstance::fresh(16 * 1024);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kUnitsPerThread; ++i) {
        const Records records =
            make_records(static_cast<std::uint32_t>(t * 1000 + i), {std::size_t(100 + i % 300)});
        Lsn end;
        while ((end = a.log->append(testing::views(records))) == 0) {
          a.log->commit(a.log->end_lsn());
          a.log->checkpoint(a.log->durable_lsn());
        }
        a.log->commit(end);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_GT(a.log->stats().checkpoints, 0u);
  EXPECT_LE(a.log->stats().used_bytes, a.log->stats().capacity);

  LogInstance b = LogInstance::restart(a.memory(), a.log->root_offset());
  const std::vector<Unit> replayed = b.replay();
  ASSERT_FALSE(replayed.empty());
  EXPECT_GT(replayed.front().end, a.log->checkpoint_lsn());
  EXPECT_EQ(replayed.back().end, a.log->end_lsn());
  std::map<int, int> last_of_thread;
  for (std::size_t i = 0; i < replayed.size(); ++i) {
    if (i > 0) {
      EXPECT_GT(replayed[i].end, replayed[i - 1].end);
    }
    const int tag = replayed[i].records.at(0).first / 16;
    const int t = tag / 1000;
    const int seq = tag % 1000;
    if (last_of_thread.count(t) != 0) {
      EXPECT_EQ(seq, last_of_thread[t] + 1) << "thread " << t;
    }
    last_of_thread[t] = seq;
    EXPECT_EQ(replayed[i].records,
              make_records(static_cast<std::uint32_t>(tag), {std::size_t(100 + seq % 300)}));
  }
}

TEST(RedoLog, CheckpointMovesWhereReplayStarts) {
  pm::CrashSimulator sim(testing::kPoolBytes);
  LogInstance a = LogInstance::fresh(64 * 1024, &sim);
  const Unit u1 = a.append(make_records(1, {10}));
  const Unit u2 = a.append(make_records(2, {20}));
  const Unit u3 = a.append(make_records(3, {30}));
  EXPECT_THROW(a.log->checkpoint(u1.end), RedoLogError) << "not durable yet";
  a.log->commit(u3.end);
  a.log->checkpoint(u1.end);
  EXPECT_EQ(a.log->checkpoint_lsn(), u1.end);
  a.log->checkpoint(0);  // behind the checkpoint: changes nothing
  EXPECT_EQ(a.log->checkpoint_lsn(), u1.end);
  EXPECT_THROW(a.log->checkpoint(u3.end + 16), RedoLogError) << "beyond the durable LSN";
  LogInstance b = LogInstance::restart(sim.image(), a.log->root_offset());
  EXPECT_EQ(b.log->checkpoint_lsn(), u1.end);
  EXPECT_EQ(b.replay(), (std::vector<Unit>{u2, u3}));
  // The LSNs the lap skip jumped over are no unit boundary.
  EXPECT_THROW(b.log->checkpoint(u3.end + 32), RedoLogError);
}

TEST(RedoLog, OpenRefusesAForeignPageFileAndLeavesThePoolUnchanged) {
  LogInstance a = LogInstance::fresh(8192);
  a.log->commit(a.append(make_records(1, {100})).end);
  const std::vector<char> before = a.memory();
  try {
    (void)RedoLog::open(*a.pool, a.log->root_offset(), testing::kPageFileId + 1);
    FAIL() << "a log of another page file was opened";
  } catch (const RedoLogError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(std::to_string(testing::kPageFileId)), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(testing::kPageFileId + 1)), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  EXPECT_EQ(a.memory(), before);
}

TEST(RedoLog, OpenRefusesACorruptRoot) {
  LogInstance a = LogInstance::fresh(8192);
  const std::uint64_t root = a.log->root_offset();
  char* bytes = a.pool->region().at<char>(root);
  bytes[24] ^= 1;  // the region size, under the root's checksum
  EXPECT_THROW((void)RedoLog::open(*a.pool, root, testing::kPageFileId), RedoLogError);
  bytes[24] ^= 1;
  EXPECT_NO_THROW((void)RedoLog::open(*a.pool, root, testing::kPageFileId));
  bytes[0] = 'X';  // the magic
  EXPECT_THROW((void)RedoLog::open(*a.pool, root, testing::kPageFileId), RedoLogError);
  EXPECT_THROW((void)RedoLog::open(*a.pool, 8, testing::kPageFileId), RedoLogError);
  EXPECT_THROW((void)RedoLog::open(*a.pool, a.pool->heap_end(), testing::kPageFileId),
               RedoLogError);
}

// The case the lap skip exists for. Units A and B were appended, B reached PM whole through an
// early eviction but A did not (here: A's bytes corrupted in the image), so replay ends before
// A and B stays in the region, unacknowledged. A new unit C of A's size is committed after the
// restart and the log crashes again: replay must visit C and never the stale B, which sits where
// the unit after C would be if the log had continued right after the replayed units.
TEST(RedoLog, AStaleUnitBehindATornOneIsNeverReplayed) {
  pm::CrashSimulator sim(testing::kPoolBytes);
  LogInstance a = LogInstance::fresh(64 * 1024, &sim);
  const Unit first = a.append(make_records(1, {40}));
  a.log->commit(first.end);
  const Unit unit_a = a.append(make_records(2, {40}));
  const Unit unit_b = a.append(make_records(3, {40}));
  a.log->commit(unit_b.end);
  std::vector<char> image = sim.image();
  const std::uint64_t root = a.log->root_offset();
  std::uint64_t region_offset = 0;
  std::memcpy(&region_offset, image.data() + root + 16, sizeof(region_offset));
  image[region_offset + first.end + 30] ^= 0x55;  // a torn A

  pm::CrashSimulator sim2(testing::kPoolBytes);
  LogInstance b = LogInstance::restart(image, root, &sim2);
  EXPECT_EQ(b.replay(), std::vector<Unit>{first});
  const Unit unit_c = b.append(make_records(4, {40}));
  b.log->commit(unit_c.end);

  LogInstance c = LogInstance::restart(sim2.image(), root);
  EXPECT_EQ(c.replay(), (std::vector<Unit>{first, unit_c}));
  (void)unit_a;
}

TEST(RedoLog, AppendBeforeReplayAndCommitBeyondTheEndThrow) {
  LogInstance a = LogInstance::fresh(8192);
  const Unit u = a.append(make_records(1, {10}));
  EXPECT_THROW(a.log->commit(u.end + 16), RedoLogError);
  a.log->commit(u.end);
  LogInstance b = LogInstance::restart(a.memory(), a.log->root_offset());
  EXPECT_THROW((void)b.log->append(testing::views(make_records(2, {10}))), RedoLogError);
  EXPECT_EQ(b.replay().size(), 1u);
  EXPECT_NE(b.log->append(testing::views(make_records(2, {10}))), 0u);
}

TEST(RedoLog, CreateRefusesALogThePoolCannotHold) {
  auto pool = pm::Pool::open_region(pm::PmRegion::in_memory(testing::kPoolBytes), "redo-log-test");
  pm::Allocator allocator(*pool);
  EXPECT_THROW((void)RedoLog::create(*pool, allocator, std::size_t{5} << 30, 1), RedoLogError);
  EXPECT_THROW((void)RedoLog::create(*pool, allocator, testing::kPoolBytes, 1), RedoLogError);
  EXPECT_EQ(allocator.stats().blocks_in_use, 0u) << "a refused log keeps no block";
  // The region is one block of the heap, cache-line aligned.
  const auto log = RedoLog::create(*pool, allocator, 100'000, 1);
  std::vector<std::uint64_t> blocks;
  log->for_each_block([&](std::uint64_t offset) { blocks.push_back(offset); });
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0], log->root_offset());
  EXPECT_EQ(blocks[1] % pm::kCacheLine, 0u);
  EXPECT_GE(allocator.block_size(blocks[1]), 100'000u);
  EXPECT_EQ(log->stats().capacity, 102'400u);  // rounded to 4 KiB
}

TEST(RedoLog, CountsItsPersistenceAsLog) { EXPECT_EQ(pm::op_kind_name(pm::OpKind::kLog), "log"); }

}  // namespace
}  // namespace pmcached::buffer

// Persistence primitives: instruction names, flush/fence counters per kind and per thread.
#include "engine/pm/persistence.h"

#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace pmcached::pm {
namespace {

OpCounters counters_of(OpKind kind) { return totals().by_kind[static_cast<std::size_t>(kind)]; }

alignas(64) char g_buffer[1024];

TEST(Persistence, ParsesFlushInstructionNames) {
  FlushInstruction out = FlushInstruction::kAuto;
  ASSERT_TRUE(parse_flush_instruction("clflush", out));
  EXPECT_EQ(out, FlushInstruction::kClflush);
  ASSERT_TRUE(parse_flush_instruction("clflushopt", out));
  EXPECT_EQ(out, FlushInstruction::kClflushopt);
  ASSERT_TRUE(parse_flush_instruction("clwb", out));
  EXPECT_EQ(out, FlushInstruction::kClwb);
  ASSERT_TRUE(parse_flush_instruction("auto", out));
  EXPECT_EQ(out, FlushInstruction::kAuto);
  out = FlushInstruction::kClwb;
  for (const char* bad : {"", "CLWB", "clwb ", "clflush2", "sfence"}) {
    EXPECT_FALSE(parse_flush_instruction(bad, out)) << bad;
  }
  EXPECT_EQ(out, FlushInstruction::kClwb);  // untouched on failure
  for (auto i :
       {FlushInstruction::kClflush, FlushInstruction::kClflushopt, FlushInstruction::kClwb}) {
    FlushInstruction back = FlushInstruction::kAuto;
    ASSERT_TRUE(parse_flush_instruction(flush_instruction_name(i), back));
    EXPECT_EQ(back, i);
  }
}

TEST(Persistence, ConfigureResolvesAutoAndEveryInstructionFlushes) {
  const FlushInstruction best = configure({});
  EXPECT_NE(best, FlushInstruction::kAuto);
  EXPECT_EQ(active_flush_instruction(), best);
  for (auto wanted :
       {FlushInstruction::kClflush, FlushInstruction::kClflushopt, FlushInstruction::kClwb}) {
    const FlushInstruction used = configure({wanted, 0});
    EXPECT_NE(used, FlushInstruction::kAuto);
    EXPECT_EQ(active_flush_instruction(), used);
    g_buffer[0] = 1;
    flush_lines(g_buffer, sizeof(g_buffer));  // executes the instruction: must not fault
    fence();
  }
  EXPECT_EQ(configure({FlushInstruction::kClflush, 0}), FlushInstruction::kClflush);
  configure({});
}

TEST(Persistence, CountsLinesOfUnalignedRanges) {
  reset_counters();
  flush_lines(g_buffer, 1);        // 1 line
  flush_lines(g_buffer + 63, 2);   // straddles: 2 lines
  flush_lines(g_buffer, 64);       // 1 line
  flush_lines(g_buffer + 1, 128);  // 3 lines
  flush_lines(g_buffer, 0);        // nothing
  EXPECT_EQ(counters_of(OpKind::kOther).lines_flushed, 7u);
  EXPECT_EQ(counters_of(OpKind::kOther).fences, 0u);
}

TEST(Persistence, CountsPerOpScopeKind) {
  reset_counters();
  {
    OpScope scope(OpKind::kInsert);
    flush_lines(g_buffer, 128);
    fence();
    {
      OpScope nested(OpKind::kDelete);  // nested: still part of the insert
      flush_lines(g_buffer, 1);
      fence();
    }
  }
  {
    OpScope scope(OpKind::kItem);
    flush_lines(g_buffer, 64);
  }
  fence();  // outside any scope
  const OpCounters insert = counters_of(OpKind::kInsert);
  EXPECT_EQ(insert.operations, 1u);
  EXPECT_EQ(insert.lines_flushed, 3u);
  EXPECT_EQ(insert.fences, 2u);
  EXPECT_EQ(counters_of(OpKind::kDelete).operations, 0u);
  EXPECT_EQ(counters_of(OpKind::kDelete).lines_flushed, 0u);
  EXPECT_EQ(counters_of(OpKind::kItem).operations, 1u);
  EXPECT_EQ(counters_of(OpKind::kItem).lines_flushed, 1u);
  EXPECT_EQ(counters_of(OpKind::kOther).fences, 1u);
  EXPECT_EQ(counters_of(OpKind::kOther).operations, 0u);
  const OpCounters sum = totals().sum();
  EXPECT_EQ(sum.operations, 2u);
  EXPECT_EQ(sum.lines_flushed, 4u);
  EXPECT_EQ(sum.fences, 3u);
}

TEST(Persistence, SetKindRelabelsTheWholeOperation) {
  reset_counters();
  {
    OpScope scope(OpKind::kInsert);
    flush_lines(g_buffer, 64);
    fence();
    scope.set_kind(OpKind::kUpdate);
    flush_lines(g_buffer, 64);
  }
  EXPECT_EQ(counters_of(OpKind::kInsert).operations, 0u);
  EXPECT_EQ(counters_of(OpKind::kInsert).lines_flushed, 0u);
  EXPECT_EQ(counters_of(OpKind::kUpdate).operations, 1u);
  EXPECT_EQ(counters_of(OpKind::kUpdate).lines_flushed, 2u);
  EXPECT_EQ(counters_of(OpKind::kUpdate).fences, 1u);
  {
    OpScope outer(OpKind::kDelete);
    OpScope inner(OpKind::kItem);
    inner.set_kind(OpKind::kInsert);  // a nested scope does not relabel the operation
    flush_lines(g_buffer, 1);
  }
  EXPECT_EQ(counters_of(OpKind::kDelete).operations, 1u);
  EXPECT_EQ(counters_of(OpKind::kDelete).lines_flushed, 1u);
  EXPECT_EQ(counters_of(OpKind::kInsert).operations, 0u);
}

TEST(Persistence, TotalsSumLiveAndExitedThreads) {
  reset_counters();
  auto work = [] {
    for (int i = 0; i < 100; ++i) {
      OpScope scope(OpKind::kRecovery);
      flush_lines(g_buffer, 64);
      fence();
    }
  };
  std::vector<std::thread> exited;
  for (int t = 0; t < 3; ++t) exited.emplace_back(work);
  for (std::thread& t : exited) t.join();
  // One more thread stays alive (blocked on a future) while the totals are read.
  std::promise<void> done_working;
  std::promise<void> may_exit;
  std::thread live([&] {
    work();
    done_working.set_value();
    may_exit.get_future().wait();
  });
  done_working.get_future().wait();
  const OpCounters recovery = counters_of(OpKind::kRecovery);
  may_exit.set_value();
  live.join();
  EXPECT_EQ(recovery.operations, 400u);
  EXPECT_EQ(recovery.lines_flushed, 400u);
  EXPECT_EQ(recovery.fences, 400u);
  EXPECT_EQ(counters_of(OpKind::kRecovery).operations, 400u);  // kept after the exit
  reset_counters();
  EXPECT_EQ(totals().sum().operations, 0u);
  EXPECT_EQ(totals().sum().lines_flushed, 0u);
}

TEST(Persistence, WriteLatencyBusyWaitsPerLine) {
  configure({FlushInstruction::kAuto, 200'000});  // 0.2 ms per line
  const auto start = std::chrono::steady_clock::now();
  flush_lines(g_buffer, 5 * 64);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  configure({});
  EXPECT_GE(elapsed, std::chrono::microseconds(1000));
}

TEST(Persistence, OpKindNames) {
  EXPECT_EQ(op_kind_name(OpKind::kInsert), "insert");
  EXPECT_EQ(op_kind_name(OpKind::kUpdate), "update");
  EXPECT_EQ(op_kind_name(OpKind::kDelete), "delete");
  EXPECT_EQ(op_kind_name(OpKind::kItem), "item");
  EXPECT_EQ(op_kind_name(OpKind::kRecovery), "recovery");
  EXPECT_EQ(op_kind_name(OpKind::kOther), "other");
}

}  // namespace
}  // namespace pmcached::pm

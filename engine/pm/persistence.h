// Persistence primitives and their cost model: flush cache lines, fence, persist.
//
// Every persistent write in pmcached goes through a PmRegion (pm_region.h), which calls these.
// The flush instruction is chosen once at start-up (clflush as in seed 002, clflushopt, clwb;
// kAuto = the best the CPU has). An optional emulated PM write latency busy-waits N ns after
// each flushed line (seed 002, ch. 4). Every flushed line and every fence is counted per
// thread and per operation kind, so "flushes per insert" (seed 002 Table 5.1) can be read
// from `stats engine`.
//
// Thread safety: configure() once at start-up before any other call; counters are
// per-thread and summed by totals() (relaxed reads, approximate while threads run).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace pmcached::pm {

inline constexpr std::size_t kCacheLine = 64;

enum class FlushInstruction : std::uint8_t { kAuto, kClflush, kClflushopt, kClwb };

// What the current thread is doing, for per-operation counters. Index engines count their
// own work as kInsert (a new key), kUpdate (a key's reference replaced) or kDelete, so that
// "flushes per insert" means what seed 002 Table 5.1 means: the index's flushes. Item records
// written by the store are counted as kItem. The paged engines' redo log (engine/buffer/
// redo_log.h) counts its group commits, checkpoints and replay as kLog (unless the caller has a
// scope of its own open: the outermost scope's kind wins).
enum class OpKind : std::uint8_t {
  kInsert,
  kUpdate,
  kDelete,
  kItem,
  kRecovery,
  kLog,
  kOther,
  kCount
};

struct PersistConfig {
  FlushInstruction flush = FlushInstruction::kAuto;
  std::uint32_t write_latency_ns = 0;  // busy-wait after each flushed line
};

// Applies `config`; resolves kAuto. Returns the instruction actually used.
FlushInstruction configure(const PersistConfig& config);
[[nodiscard]] FlushInstruction active_flush_instruction() noexcept;
[[nodiscard]] std::string_view flush_instruction_name(FlushInstruction instruction) noexcept;
// Parses "clflush|clflushopt|clwb|auto"; false for anything else.
[[nodiscard]] bool parse_flush_instruction(std::string_view text, FlushInstruction& out) noexcept;

// Flushes every cache line of [addr, addr+len) (no fence), counted under the current operation.
void flush_lines(const void* addr, std::size_t len) noexcept;
// The same, counted under `kind` whatever the current operation is (a deferred item flush
// issued inside an index operation is still the item's).
void flush_lines(const void* addr, std::size_t len, OpKind kind) noexcept;
// Orders the flushes before it (sfence).
void fence() noexcept;

struct OpCounters {
  std::uint64_t operations = 0;  // OpScopes opened with this kind
  std::uint64_t lines_flushed = 0;
  std::uint64_t fences = 0;
};

struct PersistTotals {
  std::array<OpCounters, static_cast<std::size_t>(OpKind::kCount)> by_kind{};
  [[nodiscard]] OpCounters sum() const noexcept;
};

// Sums every thread's counters.
[[nodiscard]] PersistTotals totals() noexcept;
void reset_counters() noexcept;

// Marks the calling thread as doing one operation of `kind` for its lifetime; flushes and
// fences inside are counted under that kind. Nested scopes keep the outermost kind.
class OpScope {
 public:
  explicit OpScope(OpKind kind) noexcept;
  ~OpScope();
  // Re-labels this operation once it is known (an upsert that turned out to be a replace).
  void set_kind(OpKind kind) noexcept;
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  bool outermost_;
  OpKind kind_;
};

[[nodiscard]] std::string_view op_kind_name(OpKind kind) noexcept;

}  // namespace pmcached::pm

// Flush instructions, the emulated write latency and the per-thread persistence counters.
#include "engine/pm/persistence.h"

#include <immintrin.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

namespace pmcached::pm {
namespace {

constexpr std::size_t kKinds = static_cast<std::size_t>(OpKind::kCount);

bool cpu_has(FlushInstruction instruction) noexcept {
  __builtin_cpu_init();
  switch (instruction) {
    case FlushInstruction::kClflushopt: return __builtin_cpu_supports("clflushopt");
    case FlushInstruction::kClwb: return __builtin_cpu_supports("clwb");
    default: return true;  // clflush is part of SSE2, i.e. of every x86-64 CPU
  }
}

FlushInstruction best_available() noexcept {
  if (cpu_has(FlushInstruction::kClwb)) return FlushInstruction::kClwb;
  if (cpu_has(FlushInstruction::kClflushopt)) return FlushInstruction::kClflushopt;
  return FlushInstruction::kClflush;
}

std::atomic<FlushInstruction> g_instruction{best_available()};
std::atomic<std::uint32_t> g_latency_ns{0};

// Busy-waits `ns` nanoseconds: the emulated PM write latency of one flushed line.
void spin_ns(std::uint32_t ns) noexcept {
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
  while (std::chrono::steady_clock::now() < until) _mm_pause();
}

void flush_clflush(const char* p, const char* end, std::uint32_t latency) noexcept {
  for (; p < end; p += kCacheLine) {
    _mm_clflush(p);
    if (latency != 0) spin_ns(latency);
  }
}

__attribute__((target("clflushopt"))) void flush_clflushopt(const char* p, const char* end,
                                                            std::uint32_t latency) noexcept {
  for (; p < end; p += kCacheLine) {
    _mm_clflushopt(const_cast<char*>(p));
    if (latency != 0) spin_ns(latency);
  }
}

__attribute__((target("clwb"))) void flush_clwb(const char* p, const char* end,
                                                std::uint32_t latency) noexcept {
  for (; p < end; p += kCacheLine) {
    _mm_clwb(const_cast<char*>(p));
    if (latency != 0) spin_ns(latency);
  }
}

// One thread's counters. Only the owning thread writes them (relaxed load + store, no RMW);
// totals() reads them from other threads.
struct AtomicCounters {
  std::atomic<std::uint64_t> operations{0};
  std::atomic<std::uint64_t> lines_flushed{0};
  std::atomic<std::uint64_t> fences{0};
};

void bump(std::atomic<std::uint64_t>& counter, std::uint64_t by) noexcept {
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

void add_into(PersistTotals& totals, const std::array<AtomicCounters, kKinds>& counters) {
  for (std::size_t k = 0; k < kKinds; ++k) {
    totals.by_kind[k].operations += counters[k].operations.load(std::memory_order_relaxed);
    totals.by_kind[k].lines_flushed += counters[k].lines_flushed.load(std::memory_order_relaxed);
    totals.by_kind[k].fences += counters[k].fences.load(std::memory_order_relaxed);
  }
}

struct ThreadCounters;

// Every live thread's counters, the final counts of exited threads, and the baseline that
// reset_counters() subtracts (so a reset never writes another thread's counters).
struct Registry {
  std::mutex mutex;
  std::vector<ThreadCounters*> live;
  PersistTotals retired;
  PersistTotals baseline;
};

Registry& registry() {
  static Registry* instance = new Registry;  // never destroyed: threads may exit after main
  return *instance;
}

struct ThreadCounters {
  std::array<AtomicCounters, kKinds> by_kind;
  int depth = 0;                  // nesting of OpScopes
  OpKind kind = OpKind::kOther;   // the outermost scope's kind
  std::uint64_t scope_lines = 0;  // flushed inside the current outermost scope
  std::uint64_t scope_fences = 0;

  ThreadCounters() {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    r.live.push_back(this);
  }
  ~ThreadCounters() {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    add_into(r.retired, by_kind);
    std::erase(r.live, this);
  }
  AtomicCounters& current() noexcept { return by_kind[static_cast<std::size_t>(kind)]; }
};

ThreadCounters& local() noexcept {
  thread_local ThreadCounters counters;
  return counters;
}

}  // namespace

FlushInstruction configure(const PersistConfig& config) {
  FlushInstruction instruction = config.flush;
  if (instruction == FlushInstruction::kAuto || !cpu_has(instruction)) {
    instruction = best_available();
  }
  g_instruction.store(instruction, std::memory_order_relaxed);
  g_latency_ns.store(config.write_latency_ns, std::memory_order_relaxed);
  return instruction;
}

FlushInstruction active_flush_instruction() noexcept {
  return g_instruction.load(std::memory_order_relaxed);
}

std::string_view flush_instruction_name(FlushInstruction instruction) noexcept {
  switch (instruction) {
    case FlushInstruction::kAuto: return "auto";
    case FlushInstruction::kClflush: return "clflush";
    case FlushInstruction::kClflushopt: return "clflushopt";
    case FlushInstruction::kClwb: return "clwb";
  }
  return "unknown";
}

bool parse_flush_instruction(std::string_view text, FlushInstruction& out) noexcept {
  for (FlushInstruction candidate : {FlushInstruction::kAuto, FlushInstruction::kClflush,
                                     FlushInstruction::kClflushopt, FlushInstruction::kClwb}) {
    if (text == flush_instruction_name(candidate)) {
      out = candidate;
      return true;
    }
  }
  return false;
}

void flush_lines(const void* addr, std::size_t len) noexcept {
  flush_lines(addr, len, local().kind);
}

void flush_lines(const void* addr, std::size_t len, OpKind kind) noexcept {
  if (len == 0) return;
  const auto first = reinterpret_cast<std::uintptr_t>(addr) & ~(kCacheLine - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(addr) + len;
  const char* p = reinterpret_cast<const char*>(first);
  const char* e = reinterpret_cast<const char*>(end);
  const std::uint32_t latency = g_latency_ns.load(std::memory_order_relaxed);
  switch (g_instruction.load(std::memory_order_relaxed)) {
    case FlushInstruction::kClwb: flush_clwb(p, e, latency); break;
    case FlushInstruction::kClflushopt: flush_clflushopt(p, e, latency); break;
    default: flush_clflush(p, e, latency); break;
  }
  const std::uint64_t lines = (end - first + kCacheLine - 1) / kCacheLine;
  ThreadCounters& counters = local();
  bump(counters.by_kind[static_cast<std::size_t>(kind)].lines_flushed, lines);
  // Only the current operation's own lines move with OpScope::set_kind.
  if (kind == counters.kind) counters.scope_lines += lines;
}

void fence() noexcept {
  _mm_sfence();
  ThreadCounters& counters = local();
  bump(counters.current().fences, 1);
  counters.scope_fences += 1;
}

OpCounters PersistTotals::sum() const noexcept {
  OpCounters total;
  for (const OpCounters& c : by_kind) {
    total.operations += c.operations;
    total.lines_flushed += c.lines_flushed;
    total.fences += c.fences;
  }
  return total;
}

PersistTotals totals() noexcept {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  PersistTotals result = r.retired;
  for (const ThreadCounters* t : r.live) add_into(result, t->by_kind);
  // Saturating: set_kind() may move counts taken before a reset to another kind.
  const auto minus = [](std::uint64_t a, std::uint64_t b) { return a > b ? a - b : 0; };
  for (std::size_t k = 0; k < kKinds; ++k) {
    OpCounters& c = result.by_kind[k];
    const OpCounters& base = r.baseline.by_kind[k];
    c.operations = minus(c.operations, base.operations);
    c.lines_flushed = minus(c.lines_flushed, base.lines_flushed);
    c.fences = minus(c.fences, base.fences);
  }
  return result;
}

void reset_counters() noexcept {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  PersistTotals now = r.retired;
  for (const ThreadCounters* t : r.live) add_into(now, t->by_kind);
  r.baseline = now;
}

OpScope::OpScope(OpKind kind) noexcept : outermost_(false), kind_(kind) {
  ThreadCounters& counters = local();
  outermost_ = counters.depth++ == 0;
  if (outermost_) {
    counters.kind = kind;
    counters.scope_lines = 0;
    counters.scope_fences = 0;
    bump(counters.current().operations, 1);
  }
}

OpScope::~OpScope() {
  ThreadCounters& counters = local();
  if (--counters.depth == 0) counters.kind = OpKind::kOther;
}

void OpScope::set_kind(OpKind kind) noexcept {
  if (!outermost_ || kind == kind_) return;
  // Moves the whole operation so far (its count, lines and fences) to the new kind.
  ThreadCounters& counters = local();
  AtomicCounters& from = counters.current();
  AtomicCounters& to = counters.by_kind[static_cast<std::size_t>(kind)];
  bump(from.operations, static_cast<std::uint64_t>(-1));
  bump(from.lines_flushed, static_cast<std::uint64_t>(0) - counters.scope_lines);
  bump(from.fences, static_cast<std::uint64_t>(0) - counters.scope_fences);
  bump(to.operations, 1);
  bump(to.lines_flushed, counters.scope_lines);
  bump(to.fences, counters.scope_fences);
  counters.kind = kind;
  kind_ = kind;
}

std::string_view op_kind_name(OpKind kind) noexcept {
  switch (kind) {
    case OpKind::kInsert: return "insert";
    case OpKind::kUpdate: return "update";
    case OpKind::kDelete: return "delete";
    case OpKind::kItem: return "item";
    case OpKind::kRecovery: return "recovery";
    case OpKind::kLog: return "log";
    case OpKind::kOther:
    case OpKind::kCount: break;
  }
  return "other";
}

}  // namespace pmcached::pm

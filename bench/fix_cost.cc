#include "bench/fix_cost.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <tuple>

#include "bench/csv_file.h"
#include "bench/scratch_dir.h"
#include "bench/spread.h"
#include "engine/buffer/buffer_manager.h"
#include "engine/buffer/page_file.h"

namespace pmcached::bench {
namespace {

using buffer::BufferManager;
using buffer::BufferOptions;
using buffer::BufferStats;
using buffer::LatchMode;
using buffer::PageGuard;
using buffer::PageId;
using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kInner = 1;
constexpr std::uint32_t kLeaf = 2;
constexpr std::size_t kCountAt = 16;
constexpr std::size_t kSlotsAt = 24;
constexpr PageId kRoot = 1;

enum class Way { kHashFix, kHashFixChild, kSwizzle };
constexpr std::array<Way, 3> kWays{Way::kHashFix, Way::kHashFixChild, Way::kSwizzle};
const char* way_name(Way way) {
  switch (way) {
    case Way::kHashFix: return "hash-fix";
    case Way::kHashFixChild: return "hash-fix-child";
    case Way::kSwizzle: return "swizzle";
  }
  return "?";
}

enum class Scope { kPath, kBelowRoot };
constexpr std::array<Scope, 2> kScopes{Scope::kPath, Scope::kBelowRoot};
const char* scope_name(Scope scope) { return scope == Scope::kPath ? "path" : "below-root"; }

// Pages level by level: the root is 1, level l holds fanout^l pages, children of page j of
// level l are pages j * fanout .. j * fanout + fanout - 1 of level l + 1.
struct Tree {
  std::uint32_t fanout;
  unsigned levels;
  std::uint64_t width(unsigned level) const {
    std::uint64_t w = 1;
    for (unsigned l = 0; l < level; ++l) w *= fanout;
    return w;
  }
  PageId first(unsigned level) const {
    PageId id = kRoot;
    for (unsigned l = 0; l < level; ++l) id += width(l);
    return id;
  }
  PageId pages() const { return first(levels) - 1; }
};

std::uint64_t load_u64(const std::byte* at) {
  std::uint64_t v;
  std::memcpy(&v, at, sizeof(v));
  return v;
}

void child_slots(std::byte* page, const std::function<void(std::uint64_t&)>& visit) {
  if (reinterpret_cast<const buffer::PageHeader*>(page)->kind != kInner) return;
  std::uint32_t n;
  std::memcpy(&n, page + kCountAt, sizeof(n));
  auto* slots = reinterpret_cast<std::uint64_t*>(page + kSlotsAt);
  for (std::uint32_t i = 0; i < n; ++i) visit(slots[i]);
}

std::uint64_t* slot_at(const PageGuard& page, std::size_t i) {
  return reinterpret_cast<std::uint64_t*>(page.data() + kSlotsAt) + i;
}

void write_tree(buffer::PageFile& file, const Tree& tree) {
  BufferOptions options;
  options.frames = 1024;
  options.child_slots = child_slots;
  BufferManager bm(file, options);
  const std::size_t page_size = file.page_size();
  for (unsigned level = 0; level < tree.levels; ++level) {
    for (std::uint64_t j = 0; j < tree.width(level); ++j) {
      const PageId id = tree.first(level) + j;
      PageGuard g = bm.fix_new(id);
      const bool leaf = level + 1 == tree.levels;
      g.header().kind = leaf ? kLeaf : kInner;
      if (!leaf) {
        const std::uint32_t n = tree.fanout;
        std::memcpy(g.data() + kCountAt, &n, sizeof(n));
        for (std::uint32_t s = 0; s < n; ++s) *slot_at(g, s) = tree.first(level + 1) + j * n + s;
      }
      std::memcpy(g.data() + page_size - 8, &id, sizeof(id));
      g.mark_dirty(1);
    }
  }
  bm.write_back_all();
}

// The child of `parent` at `slot`, fixed shared, the way `W` does it.
template <Way W>
PageGuard fix_child(BufferManager& bm, const PageGuard& parent, std::uint64_t* slot) {
  if constexpr (W == Way::kHashFix) {
    return bm.fix(std::atomic_ref<std::uint64_t>(*slot).load(std::memory_order_relaxed),
                  LatchMode::kShared);
  } else {
    return bm.fix_child(parent, slot, LatchMode::kShared);
  }
}

// `count` traversals; `slots` holds `depth` child positions per traversal. With `root` (held by
// the caller) the walk starts below it, else at the root fixed by id. Returns the sum of the
// leaves' own ids.
template <Way W>
std::uint64_t walk(BufferManager& bm, const PageGuard* root, const std::uint16_t* slots,
                   std::size_t count, unsigned depth, std::size_t page_size) {
  std::uint64_t sum = 0;
  for (std::size_t t = 0; t < count; ++t, slots += depth) {
    PageGuard page;
    if (root == nullptr) page = bm.fix(kRoot, LatchMode::kShared);
    const PageGuard* parent = root != nullptr ? root : &page;
    for (unsigned d = 0; d < depth; ++d) {
      PageGuard child = fix_child<W>(bm, *parent, slot_at(*parent, slots[d]));
      page = std::move(child);  // the parent goes only now: latch coupling
      parent = &page;
    }
    sum += load_u64(page.data() + page_size - 8);
  }
  return sum;
}

std::uint64_t walk(Way way, BufferManager& bm, const PageGuard* root, const std::uint16_t* slots,
                   std::size_t count, unsigned depth, std::size_t page_size) {
  switch (way) {
    case Way::kHashFix: return walk<Way::kHashFix>(bm, root, slots, count, depth, page_size);
    case Way::kHashFixChild:
      return walk<Way::kHashFixChild>(bm, root, slots, count, depth, page_size);
    case Way::kSwizzle: return walk<Way::kSwizzle>(bm, root, slots, count, depth, page_size);
  }
  return 0;
}

// One thread's random paths and the sum of the leaf ids they end at.
struct Paths {
  std::vector<std::uint16_t> slots;
  std::uint64_t leaf_sum = 0;
};

Paths make_paths(const Tree& tree, std::size_t count, std::uint64_t seed) {
  const unsigned depth = tree.levels - 1;
  Paths p;
  p.slots.resize(count * depth);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::uint32_t> pick(0, tree.fanout - 1);
  for (std::size_t t = 0; t < count; ++t) {
    std::uint64_t leaf = 0;
    for (unsigned d = 0; d < depth; ++d) {
      const std::uint32_t s = pick(rng);
      p.slots[t * depth + d] = static_cast<std::uint16_t>(s);
      leaf = leaf * tree.fanout + s;
    }
    p.leaf_sum += tree.first(depth) + leaf;
  }
  return p;
}

// Thread t runs on the t-th CPU the process may use (modulo their number): the scheduler
// would first place a new thread beside its parent and spread them only some milliseconds
// later, most of a run.
void pin_to_cpu(unsigned t) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  }
  if (cpus.empty()) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpus[t % cpus.size()], &one);
  pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
}

double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// Traversals timed together: about a tenth of a millisecond, so that an interrupt or a
// preemption (this machine is shared) spoils a few batches, which the median leaves out.
constexpr std::size_t kBatch = 1000;

struct Measured {
  // Mean over the threads of each one's median batch time over the batch's fixes.
  double ns_per_fix = 0;
  // Mean over the threads of each one's whole elapsed time over its fixes, preemptions included.
  double elapsed_ns_per_fix = 0;
  // The threads' CPU time over the run's wall-clock time: about the thread count if they ran
  // side by side, about 1 if they took turns on one CPU (the machine busy with other work).
  double parallelism = 0;
  BufferStats delta;  // the counters of the timed part
  bool right_leaves = true;
};

Measured measure(BufferManager& bm, Way way, Scope scope, const std::vector<Paths>& paths,
                 const Tree& tree, std::size_t count) {
  const unsigned threads = static_cast<unsigned>(paths.size());
  const unsigned depth = tree.levels - 1;
  const std::size_t page_size = bm.page_size();
  const std::size_t per_traversal = scope == Scope::kPath ? tree.levels : depth;
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false};
  std::vector<double> ns(threads), elapsed_ns(threads), cpu_ns(threads);
  std::vector<std::uint64_t> sums(threads);
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      pin_to_cpu(t);
      PageGuard root;
      if (scope == Scope::kBelowRoot) root = bm.fix(kRoot, LatchMode::kShared);
      std::vector<double> batches;
      batches.reserve(count / kBatch + 1);
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      const auto started = Clock::now();
      const double cpu_started = thread_cpu_ns();
      for (std::size_t done = 0; done < count; done += kBatch) {
        const std::size_t n = std::min(kBatch, count - done);
        const auto batch_started = Clock::now();
        sums[t] += walk(way, bm, root ? &root : nullptr, paths[t].slots.data() + done * depth, n,
                        depth, page_size);
        const auto batch_time = Clock::now() - batch_started;
        batches.push_back(std::chrono::duration<double, std::nano>(batch_time).count() /
                          static_cast<double>(n * per_traversal));
      }
      const auto elapsed = Clock::now() - started;
      cpu_ns[t] = thread_cpu_ns() - cpu_started;
      ns[t] = spread(batches).median;
      elapsed_ns[t] = std::chrono::duration<double, std::nano>(elapsed).count() /
                      static_cast<double>(count * per_traversal);
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  const BufferStats before = bm.stats();
  const auto started = Clock::now();
  go.store(true, std::memory_order_release);
  for (std::thread& w : workers) w.join();
  const double wall_ns = std::chrono::duration<double, std::nano>(Clock::now() - started).count();
  const BufferStats after = bm.stats();
  Measured m;
  for (unsigned t = 0; t < threads; ++t) {
    m.ns_per_fix += ns[t] / threads;
    m.elapsed_ns_per_fix += elapsed_ns[t] / threads;
    m.parallelism += cpu_ns[t] / wall_ns;
    m.right_leaves = m.right_leaves && sums[t] == paths[t].leaf_sum;
  }
  m.delta.fixes = after.fixes - before.fixes;
  m.delta.misses = after.misses - before.misses;
  m.delta.hash_probes = after.hash_probes - before.hash_probes;
  m.delta.swizzled_fixes = after.swizzled_fixes - before.swizzled_fixes;
  m.delta.fix_retries = after.fix_retries - before.fix_retries;
  return m;
}

// Makes every page resident and, with swizzling, every reference swizzled.
void warm(BufferManager& bm, Way way, const Tree& tree) {
  const unsigned depth = tree.levels - 1;
  const std::uint64_t leaves = tree.width(depth);
  std::vector<std::uint16_t> slots(leaves * depth);
  for (std::uint64_t leaf = 0; leaf < leaves; ++leaf) {
    std::uint64_t rest = leaf;
    for (unsigned d = depth; d-- > 0;) {
      slots[leaf * depth + d] = static_cast<std::uint16_t>(rest % tree.fanout);
      rest /= tree.fanout;
    }
  }
  (void)walk(way, bm, nullptr, slots.data(), leaves, depth, bm.page_size());
}

double per_fix(std::uint64_t n, std::uint64_t fixes) {
  return fixes == 0 ? 0.0 : static_cast<double>(n) / static_cast<double>(fixes);
}

}  // namespace

int run_fix_cost(const FixCostOptions& o) {
  const Tree tree{o.fanout, o.levels};
  ScratchDir scratch(o.dir);
  buffer::PageFileOptions file_options;
  file_options.path = scratch.path() + "/fix_cost.pages";
  file_options.page_size = o.page_size;
  file_options.max_bytes = (tree.pages() + 1) * o.page_size + (8u << 20);
  auto file = buffer::PageFile::open(file_options);
  write_tree(*file, tree);
  const std::size_t frames = tree.pages();

  std::printf(
      "# fix cost on a warm, fully resident pool: random root-to-leaf traversals, shared latches "
      "with latch coupling\n"
      "# tree: %u levels, fanout %u, %llu pages of %zu bytes; pool %zu frames (every page); "
      "policy %s\n"
      "# page file in %s (%s; the pool is fully resident, no I/O is timed)\n"
      "# per run and thread %zu traversals, random paths (the same for every way within a "
      "repetition); repetitions: %u, the order of the ways rotated each time\n"
      "# ns per fix: each thread times batches of %zu traversals; the median batch's time over "
      "its fixes,\n#   mean over the threads (a batch an interrupt or preemption hits is left out "
      "by the median); "
      "cells: median [min-max] over the repetitions\n\n",
      o.levels, o.fanout, static_cast<unsigned long long>(tree.pages()), o.page_size, frames,
      std::string(buffer::eviction_name(o.eviction)).c_str(), scratch.path().c_str(),
      file->direct_io() ? "O_DIRECT" : "buffered, no O_DIRECT", o.traversals, o.repetitions,
      kBatch);
  std::fflush(stdout);

  std::FILE* csv = nullptr;
  if (!o.csv.empty()) {
    csv =
        open_csv(o.csv,
                 "rep,threads,way,scope,levels,fanout,page_size,pages,policy,traversals,fixes,"
                 "ns_per_fix,elapsed_ns_per_fix,parallelism,hash_probes_per_fix,swizzled_fix_share,"
                 "misses,fix_retries\n");
    if (csv == nullptr) return 2;
  }
  // (threads, scope, way) -> one value per repetition
  std::map<std::tuple<unsigned, int, int>, std::vector<double>> ns, probes, parallel;
  int status = 0;
  for (unsigned rep = 1; rep <= o.repetitions; ++rep) {
    std::map<unsigned, std::vector<Paths>> paths;
    for (unsigned threads : o.threads) {
      for (unsigned t = 0; t < threads; ++t) {
        paths[threads].push_back(make_paths(tree, o.traversals, o.seed * 1000 + rep * 10 + t));
      }
    }
    // One pool per way, all warm before any is timed, so that the three ways of a cell run
    // back to back: on this VM two-thread costs were seen to jump 3x from one run to the next
    // and stay there (the host moving its CPUs, presumably), and a ratio must not straddle that.
    std::array<std::unique_ptr<BufferManager>, kWays.size()> pools;
    for (Way way : kWays) {
      BufferOptions options;
      options.frames = frames;
      options.page_table =
          way == Way::kSwizzle ? buffer::PageTableKind::kSwizzle : buffer::PageTableKind::kHash;
      options.eviction = o.eviction;
      options.seed = o.seed;
      options.child_slots = child_slots;
      auto& bm = pools[static_cast<std::size_t>(way)];
      bm = std::make_unique<BufferManager>(*file, options);
      bm->set_root(kRoot);
      warm(*bm, way, tree);
    }
    unsigned cell = 0;
    for (unsigned threads : o.threads) {
      for (Scope scope : kScopes) {
        ++cell;
        for (std::size_t i = 0; i < kWays.size(); ++i) {
          const Way way = kWays[(i + rep + cell) % kWays.size()];
          BufferManager& bm = *pools[static_cast<std::size_t>(way)];
          const Measured m = measure(bm, way, scope, paths[threads], tree, o.traversals);
          if (m.delta.misses != 0 || !m.right_leaves) {
            std::fprintf(stderr, "fix cost: %s %s, %u threads: %llu misses, %s leaves\n",
                         way_name(way), scope_name(scope), threads,
                         static_cast<unsigned long long>(m.delta.misses),
                         m.right_leaves ? "right" : "WRONG");
            status = 1;
          }
          const double probe = per_fix(m.delta.hash_probes, m.delta.fixes);
          ns[{threads, static_cast<int>(scope), static_cast<int>(way)}].push_back(m.ns_per_fix);
          probes[{threads, static_cast<int>(scope), static_cast<int>(way)}].push_back(probe);
          parallel[{threads, static_cast<int>(scope), static_cast<int>(way)}].push_back(
              m.parallelism);
          if (csv != nullptr) {
            std::fprintf(
                csv, "%u,%u,%s,%s,%u,%u,%zu,%llu,%s,%zu,%llu,%.2f,%.2f,%.2f,%.3f,%.3f,%llu,%llu\n",
                rep, threads, way_name(way), scope_name(scope), o.levels, o.fanout, o.page_size,
                static_cast<unsigned long long>(tree.pages()),
                std::string(buffer::eviction_name(o.eviction)).c_str(), o.traversals,
                static_cast<unsigned long long>(m.delta.fixes), m.ns_per_fix, m.elapsed_ns_per_fix,
                m.parallelism, probe, per_fix(m.delta.swizzled_fixes, m.delta.fixes),
                static_cast<unsigned long long>(m.delta.misses),
                static_cast<unsigned long long>(m.delta.fix_retries));
          }
        }
      }
    }
  }
  if (csv != nullptr) std::fclose(csv);

  std::printf("%7s %10s %20s %20s %20s %20s %20s\n", "threads", "scope", "hash fix(id)",
              "hash fix_child", "swizzle fix_child", "swizzle/hash-fix", "swizzle/fix_child");
  for (unsigned threads : o.threads) {
    for (Scope scope : kScopes) {
      auto values = [&](Way way) {
        return ns[{threads, static_cast<int>(scope), static_cast<int>(way)}];
      };
      std::printf("%7u %10s", threads, scope_name(scope));
      for (Way way : kWays) {
        std::printf(" %20s", format_spread(spread(values(way)), "%.1f").c_str());
      }
      for (Way base : {Way::kHashFix, Way::kHashFixChild}) {
        std::vector<double> ratios;
        for (std::size_t r = 0; r < values(base).size(); ++r) {
          ratios.push_back(values(Way::kSwizzle)[r] / values(base)[r]);
        }
        std::printf(" %20s", format_spread(spread(ratios), "%.2f").c_str());
      }
      std::printf("\n");
    }
  }
  auto per_way_table = [&](const char* title, auto& values, const char* fmt) {
    std::printf("\n%s\n%7s %10s", title, "threads", "scope");
    for (Way way : kWays) std::printf(" %15s", way_name(way));
    std::printf("\n");
    for (unsigned threads : o.threads) {
      for (Scope scope : kScopes) {
        std::printf("%7u %10s", threads, scope_name(scope));
        for (Way way : kWays) {
          std::printf(
              fmt,
              spread(values[{threads, static_cast<int>(scope), static_cast<int>(way)}]).median);
        }
        std::printf("\n");
      }
    }
  };
  per_way_table("hash-table entries compared per fix (median)", probes, " %15.3f");
  per_way_table(
      "parallelism: the threads' CPU time over wall-clock time (median; 1 = they took "
      "turns)",
      parallel, " %15.2f");
  std::printf("\n");
  return status;
}

}  // namespace pmcached::bench

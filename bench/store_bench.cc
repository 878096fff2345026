// store_bench: the whole store in-process, opened through engine::open_store() as the server
// opens it, bptree against the dram engine (issue 18: "fully resident, bptree GET in-process
// within 1.5x of dram"). No network, no protocol parsing. A measuring program, not a test.
//
// Each repetition opens a fresh store per engine (default dram, wort, bptree with the hash page
// table, bptree with swizzling), its pool and page file in --dir (default /dev/shm, memory), and:
//   SET  N keys in a random order on one thread (values --value-size bytes, default 100);
//   warm one GET of every key: each must hit, and it sets the items' fetched bit, so that the
//        measured GETs change nothing (bptree logs a hint when a bit changes);
//   GET  --gets random existing keys per thread, for each count of --threads (default 1,2), the
//        visitor copying the value out as a server would into its reply. The GETs run in rounds
//        of one --burst per engine, every engine's store open at once and the order rotated
//        every round, so that what other processes do to the machine falls on all engines alike
//        (this machine is shared); each engine sees the same keys in the same order.
// bptree's buffer pool is sized to hold the whole data (--buffer-pool-mb), so it is fully
// resident: the program prints the buffer misses and redo-log units during the measured GETs
// (both must be 0) and the pages in use against the frames; the exit status is 3 if they were not.
//   store_bench [--engines dram,wort,bptree:hash,bptree:swizzle] [--n N] [--value-size B]
//               [--keys text|be64|random] [--gets G] [--burst B] [--threads 1,2]
//               [--repetitions R] [--dir DIR] [--buffer-pool-mb M] [--page-size B]
//               [--log-mb L] [--eviction P] [--seed S] [--csv FILE] [--key-file FILE]
//               [--buffer-pool-percent P] [--stats-csv FILE]
// Engines: "engine[:hash|:swizzle][:tN]", a paged engine's page table and b2tree's threshold N
// (e.g. b2tree:hash:t16). --key-file FILE: the keys (one per line, scripts/make-keysets.py) instead
// of generated ones, all of them or the first --n. --buffer-pool-percent P: each paged store is
// loaded with the pool above, closed (a checkpoint) and reopened with a pool of P% of the pages
// it then uses (at least the engine's minimum of frames), so that GETs miss for P < 100; the
// residency check and exit status 3 then apply only for P >= 100.
// Key formats: text "key%08d" (0..N-1) and be64 (8-byte big-endian 1..N) are what clients use,
// and both share their first 4 bytes across all keys; random (8-byte big-endian, a bijective mix
// of 1..N, so distinct) differs in the first bytes, which shows what key-prefix comparisons cost.
// Times per operation are the CPU time of the threads that ran it (CLOCK_THREAD_CPUTIME_ID: user
// and system, not the time a thread waited for a CPU) beside wall time x threads; on a quiet
// machine the two agree. The ratio to dram is taken per repetition (same keys, same moments),
// then summarised. Memory: every engine's store of a repetition is open at once.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/engine_spec.h"
#include "bench/key_file.h"
#include "bench/list_option.h"
#include "bench/machine_info.h"
#include "bench/spread.h"
#include "engine/open_store.h"
#include "engine/pm/persistence.h"

namespace pmcached::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;

struct Options {
  std::vector<EngineSpec> engines;
  std::size_t n = 200000, value_size = 100, gets = 1000000, burst = 50000;
  std::string keys = "text";  // text, be64 or random; ignored with key_file
  std::string key_file;       // keys from this file (scripts/make-keysets.py), the first n
  bool n_given = false;
  std::vector<unsigned> threads;
  unsigned repetitions = 5;
  std::string dir = "/dev/shm";
  std::size_t buffer_pool_mb = 0;  // 0: sized from N
  // > 0: after the load the store is reopened with a pool of this share of the pages in use.
  double buffer_pool_percent = 0;
  std::size_t page_size = buffer::kDefaultPageSize;
  std::size_t log_mb = 64;  // paged engines' redo log (pmcached's --log-mb)
  buffer::EvictionKind eviction = buffer::EvictionKind::kClock;
  std::uint64_t seed = 18;
  std::string csv, stats_csv;
};

using Stats = std::map<std::string, std::string>;

// One engine in one repetition.
struct Run {
  // Per operation: the CPU time of the threads that ran it (CLOCK_THREAD_CPUTIME_ID, user and
  // system), which leaves out time a thread was not running; and wall time x threads.
  double set_ns = 0, set_wall_ns = 0;
  std::map<unsigned, double> get_ns, get_wall_ns;  // per thread count
  std::map<unsigned, double> get_mops;             // per thread count: wall time, all threads
  // Paged engines only (nullopt otherwise).
  std::optional<std::uint64_t> misses_after_warmup, misses_during_gets, log_units_during_gets;
  std::optional<std::uint64_t> frames, pages_in_use;
  std::optional<std::uint64_t> pages_after_load;  // with --buffer-pool-percent
  std::string direct_io = "n/a";
  Stats stats;  // the engine's `stats engine` after the GETs
};

Stats stats_of(const engine::Store& store) {
  Stats out;
  for (const engine::EngineStat& s : store.engine_stats()) out[s.name] = s.value;
  return out;
}

std::optional<std::uint64_t> number(const Stats& stats, const std::string& name) {
  const auto it = stats.find(name);
  if (it == stats.end()) return std::nullopt;
  return std::stoull(it->second);
}

double ns_between(SteadyClock::time_point a, SteadyClock::time_point b) {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

// This thread's CPU time (user and system) in ns.
double thread_cpu_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

struct Timing {
  double wall_ns = 0, cpu_ns = 0;  // cpu_ns: summed over the threads
};

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "store_bench: %s\n", what.c_str());
  std::exit(1);
}

// Runs `per_thread` GETs on each of `threads` threads, all released at once; returns the wall
// time and the threads' CPU time. Every GET must hit and see a value of the stored size whose
// first byte is the key's. Each thread's keys are copied in order into an array of their own
// first, so that reading the next key is a sequential read, as a key in a server's receive
// buffer is in cache: a random read of the key table would miss the cache more often beside an
// engine with a larger footprint, and charge that engine for the harness.
Timing timed_gets(engine::Store& store, const std::vector<std::string>& keys, unsigned threads,
                  std::size_t per_thread, std::size_t value_size, std::uint64_t seed) {
  std::vector<std::vector<std::string>> picked(threads);
  std::vector<std::vector<char>> first_byte(threads);
  for (unsigned t = 0; t < threads; ++t) {
    std::mt19937_64 rng(seed * 7919 + t);
    picked[t].reserve(per_thread);
    first_byte[t].reserve(per_thread);
    for (std::size_t i = 0; i < per_thread; ++i) {
      const std::size_t p = rng() % keys.size();
      picked[t].push_back(keys[p]);
      first_byte[t].push_back(static_cast<char>('a' + p % 26));
    }
  }
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false};
  std::atomic<std::uint64_t> wrong{0};
  std::vector<double> cpu(threads, 0);
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::string copy;
      copy.reserve(value_size);
      const engine::ItemVisitor visit = [&copy](const engine::ItemView& item) {
        copy.assign(item.value);
      };
      engine::GetRequest request;
      std::uint64_t bad = 0;
      ready.fetch_add(1, std::memory_order_acq_rel);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      const double cpu_started = thread_cpu_ns();
      for (std::size_t i = 0; i < per_thread; ++i) {
        request.key = picked[t][i];
        copy.clear();
        const bool hit = store.get(request, visit).status == engine::StoreStatus::kHit;
        bad += !hit || copy.size() != value_size || copy[0] != first_byte[t][i];
      }
      cpu[t] = thread_cpu_ns() - cpu_started;
      wrong.fetch_add(bad, std::memory_order_relaxed);
    });
  }
  while (ready.load(std::memory_order_acquire) != threads) std::this_thread::yield();
  const auto started = SteadyClock::now();
  go.store(true, std::memory_order_release);
  for (std::thread& w : workers) w.join();
  Timing timing;
  timing.wall_ns = ns_between(started, SteadyClock::now());
  for (double c : cpu) timing.cpu_ns += c;
  if (wrong.load() != 0) {
    fail(std::to_string(wrong.load()) + " GETs of existing keys missed or saw a wrong value");
  }
  return timing;
}

// splitmix64's finaliser: a bijection on 64-bit integers, so distinct inputs stay distinct.
std::uint64_t mix64(std::uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::string key_description(const Options& o, const std::vector<std::string>& keys) {
  if (!o.key_file.empty()) {
    std::size_t bytes = 0, longest = 0;
    for (const std::string& k : keys) {
      bytes += k.size();
      longest = std::max(longest, k.size());
    }
    char text[64];
    std::snprintf(text, sizeof text, ", mean %.1f B, max %zu B",
                  static_cast<double>(bytes) / static_cast<double>(keys.size()), longest);
    return "from " + o.key_file + text;
  }
  if (o.keys == "text") return "\"key%08d\", 11 B";
  if (o.keys == "be64") return "8-byte big-endian 1..N";
  return "8-byte big-endian, random (mixed 1..N)";
}

// The label of the key set in the CSV: the key file's name without its directory and extension.
std::string key_label(const Options& o) {
  if (o.key_file.empty()) return o.keys;
  std::string stem = std::filesystem::path(o.key_file).stem().string();
  for (char& c : stem) c = c == ',' ? '_' : c;
  return stem;
}

std::size_t buffer_pool_bytes(const Options& o) {
  // About 170 bytes per item in a leaf (record, slot) at half-full pages is ~350; 512 leaves room.
  if (o.buffer_pool_mb != 0) return o.buffer_pool_mb << 20;
  return o.n * 512 + (32u << 20);
}

// P% of `pages` pages (at least one), in bytes; the engine may raise it to its minimum.
std::size_t pool_bytes_for_percent(std::uint64_t pages, double percent, std::size_t page_size) {
  const auto frames = static_cast<std::uint64_t>(static_cast<double>(pages) * percent / 100.0);
  return static_cast<std::size_t>(std::max<std::uint64_t>(frames, 1)) * page_size;
}

// One engine's store during a repetition.
struct Subject {
  const EngineSpec* spec = nullptr;
  std::string pool_path, page_file;
  std::unique_ptr<engine::OpenStore> db;
  Stats before;  // engine stats after the load and the warm-up
  Run run;
};

// Opens a fresh store for `spec`, times the SETs and runs the warm-up.
Subject open_and_load(const EngineSpec& spec, const Options& o,
                      const std::vector<std::string>& keys,
                      const std::vector<std::uint32_t>& load_order, const engine::Clock& clock) {
  Subject s;
  s.spec = &spec;
  s.pool_path = o.dir + "/store_bench-" + std::to_string(::getpid()) + "-" + spec.label + ".pool";
  s.page_file = s.pool_path + ".pages";
  std::filesystem::remove(s.pool_path);
  std::filesystem::remove(s.page_file);

  const auto open = [&](std::size_t pool_bytes) {
    engine::StoreConfig config;
    config.engine = spec.engine;
    config.pool_path = s.pool_path;
    // Items and index (wort), the log and the double-write buffer (paged engines).
    config.pool_bytes = o.n * 512 + ((o.log_mb + 64) << 20);
    config.options.memory_limit_bytes = o.n * 512 + (64u << 20);  // dram: nothing is evicted
    config.paged.page_file = s.page_file;
    config.paged.page_size = o.page_size;
    config.paged.log_bytes = o.log_mb << 20;
    config.paged.buffer_pool_bytes = pool_bytes;
    config.paged.page_file_bytes = std::max<std::uint64_t>(1ull << 30, 4 * buffer_pool_bytes(o));
    config.paged.page_table = spec.page_table;
    config.paged.eviction = o.eviction;
    if (spec.b2_threshold) config.paged.b2_threshold = *spec.b2_threshold;
    try {
      s.db = engine::open_store(std::move(config), clock);
    } catch (const std::exception& error) {
      fail(spec.label + ": " + error.what());
    }
  };
  open(buffer_pool_bytes(o));

  std::string value(o.value_size, 'v');
  engine::StoreRequest set;
  set.mode = engine::StoreMode::kSet;
  const auto started = SteadyClock::now();
  const double cpu_started = thread_cpu_ns();
  for (std::uint32_t i : load_order) {
    value[0] = static_cast<char>('a' + i % 26);
    set.key = keys[i];
    set.value = value;
    if (s.db->store().store(set).status != engine::StoreStatus::kStored) {
      fail(spec.label + ": SET of key " + std::to_string(i) + " was not stored");
    }
  }
  s.run.set_ns = (thread_cpu_ns() - cpu_started) / static_cast<double>(keys.size());
  s.run.set_wall_ns = ns_between(started, SteadyClock::now()) / static_cast<double>(keys.size());

  // A smaller pool: a clean close (a checkpoint) and a reopen with P% of the pages in use.
  if (spec.paged && o.buffer_pool_percent > 0) {
    s.run.pages_after_load = number(stats_of(s.db->store()), "pages_in_use");
    if (!s.run.pages_after_load) fail(spec.label + ": no pages_in_use in its stats");
    s.db->close();
    s.db.reset();
    open(pool_bytes_for_percent(*s.run.pages_after_load, o.buffer_pool_percent, o.page_size));
  }

  // Warm-up: every key once, in key-index order.
  std::size_t warm_misses = 0;
  engine::GetRequest get;
  for (const std::string& key : keys) {
    get.key = key;
    warm_misses += s.db->store().get(get, nullptr).status != engine::StoreStatus::kHit;
  }
  if (warm_misses != 0) fail(spec.label + ": " + std::to_string(warm_misses) + " keys missing");
  s.before = stats_of(s.db->store());
  return s;
}

// Reads what the GETs did to a paged engine, closes the store and removes its files.
void finish(Subject& s) {
  const Stats after = stats_of(s.db->store());
  Run& out = s.run;
  out.stats = after;
  if (s.spec->paged) {
    out.misses_after_warmup = number(s.before, "buffer_misses");
    const auto misses = number(after, "buffer_misses");
    const auto units_before = number(s.before, "log_units");
    const auto units_after = number(after, "log_units");
    if (misses && out.misses_after_warmup) {
      out.misses_during_gets = *misses - *out.misses_after_warmup;
    }
    if (units_before && units_after) out.log_units_during_gets = *units_after - *units_before;
    out.frames = number(after, "buffer_frames");
    out.pages_in_use = number(after, "pages_in_use");
    if (after.count("page_file_direct_io") != 0) out.direct_io = after.at("page_file_direct_io");
  }
  s.db->close();
  s.db.reset();
  std::filesystem::remove(s.pool_path);
  std::filesystem::remove(s.page_file);
}

// One repetition: every engine's store loaded (in a rotated order), then the GETs in rounds of
// one burst per engine (the order rotated every round, every engine given the same keys), so
// that what other processes do to the machine falls on all engines alike.
std::vector<Run> repetition(const Options& o, const std::vector<std::string>& keys,
                            const std::vector<std::uint32_t>& load_order, unsigned rep) {
  const std::size_t count = o.engines.size();
  // Time stands still for the stores: a GET bumps an item's last access (a patch of its record,
  // logged on paged engines) once that access is a minute old, as memcached does, and with a
  // small pool the warm-ups take minutes, so the engine whose GETs came a minute after its
  // warm-up wrote a log unit per GET and the other did not (the bimodal pool runs of stop 51).
  // The GETs measured here are lookups alone.
  engine::ManualClock clock;
  std::vector<Subject> subjects(count);
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t e = (k + rep - 1) % count;
    subjects[e] = open_and_load(o.engines[e], o, keys, load_order, clock);
  }
  for (unsigned threads : o.threads) {
    std::vector<Timing> sum(count);
    const std::size_t rounds = (o.gets + o.burst - 1) / o.burst;
    for (std::size_t round = 0; round < rounds; ++round) {
      const std::size_t gets = std::min(o.burst, o.gets - round * o.burst);
      const std::uint64_t seed = o.seed * 1000003 + rep * 10007 + threads * 1009 + round;
      for (std::size_t k = 0; k < count; ++k) {
        const std::size_t e = (k + round + rep - 1) % count;
        const Timing t =
            timed_gets(subjects[e].db->store(), keys, threads, gets, o.value_size, seed);
        sum[e].wall_ns += t.wall_ns;
        sum[e].cpu_ns += t.cpu_ns;
      }
    }
    for (std::size_t e = 0; e < count; ++e) {
      const double ops = static_cast<double>(o.gets) * threads;
      subjects[e].run.get_ns[threads] = sum[e].cpu_ns / ops;
      subjects[e].run.get_wall_ns[threads] = sum[e].wall_ns * threads / ops;
      subjects[e].run.get_mops[threads] = ops / sum[e].wall_ns * 1000.0;
    }
  }
  std::vector<Run> runs;
  for (Subject& s : subjects) {
    finish(s);
    runs.push_back(s.run);
  }
  return runs;
}

std::string file_system_of(const std::string& dir) {
  std::ifstream mounts("/proc/mounts");
  std::string device, point, type, best_type = "unknown";
  std::size_t best = 0;
  std::string rest;
  const std::string path = std::filesystem::weakly_canonical(dir).string();
  while (mounts >> device >> point >> type && std::getline(mounts, rest)) {
    const bool covers = path == point ||
                        (path.rfind(point, 0) == 0 && (point == "/" || path.size() > point.size()));
    if (covers && point.size() >= best) {
      best = point.size();
      best_type = type;
    }
  }
  return best_type;
}

// The --keys format's N keys.
std::vector<std::string> generated_keys(const Options& o) {
  std::vector<std::string> keys(o.n);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (o.keys == "text") {
      char key[32];
      std::snprintf(key, sizeof key, "key%08zu", i);
      keys[i] = key;
    } else {
      std::string k(8, '\0');
      std::uint64_t v = o.keys == "be64" ? i + 1 : mix64(i + 1);
      for (int b = 7; b >= 0; --b, v >>= 8) k[static_cast<std::size_t>(b)] = static_cast<char>(v);
      keys[i] = k;
    }
  }
  return keys;
}

int bench(Options o) {
  std::vector<std::string> keys;
  if (o.key_file.empty()) {
    keys = generated_keys(o);
  } else {
    try {
      keys = read_key_file(o.key_file, o.n_given ? o.n : 0);
    } catch (const std::exception& error) {
      fail(error.what());
    }
    o.n = keys.size();
  }
  std::vector<std::uint32_t> load_order(o.n);
  for (std::size_t i = 0; i < o.n; ++i) load_order[i] = static_cast<std::uint32_t>(i);
  std::mt19937_64 rng(o.seed);
  std::shuffle(load_order.begin(), load_order.end(), rng);

  std::string threads_text;
  for (unsigned t : o.threads)
    threads_text += (threads_text.empty() ? "" : ",") + std::to_string(t);
  std::printf(
      "# store_bench: the store in-process through open_store() (no network), per engine\n");
  std::printf("# machine: %u CPUs, %s; build: %s\n", cpu_count(), cpu_model().c_str(),
              build_type().c_str());
  std::printf("# load average at start: %s\n", load_average().c_str());
  std::printf(
      "# files: pool and page file in %s (%s); emulated PM, flush instruction %s, no added "
      "write latency\n",
      o.dir.c_str(), file_system_of(o.dir).c_str(),
      std::string(pm::flush_instruction_name(pm::active_flush_instruction())).c_str());
  std::printf(
      "# workload: %zu keys (%s), values of %zu B; SET all in a random order on 1 thread; one "
      "warm-up GET of every key;\n#   then %zu GETs of random existing keys per thread with %s "
      "threads, the visitor copying the value,\n#   in rounds of %zu per thread per engine "
      "(all stores open, the order rotated each round, the same keys for every engine)\n",
      o.n, key_description(o, keys).c_str(), o.value_size, o.gets, threads_text.c_str(), o.burst);
  if (o.buffer_pool_percent > 0) {
    std::printf(
        "# paged engines: page %zu B, redo log %zu MiB; loaded with a buffer pool of %zu MiB, then "
        "closed and\n#   reopened with a pool of %g%% of the pages in use (at least the engine's "
        "minimum), eviction %s\n",
        o.page_size, o.log_mb, buffer_pool_bytes(o) >> 20, o.buffer_pool_percent,
        std::string(buffer::eviction_name(o.eviction)).c_str());
  } else {
    std::printf(
        "# paged engines: page %zu B, buffer pool %zu MiB (meant to hold all the data), "
        "redo log %zu MiB, eviction %s\n",
        o.page_size, buffer_pool_bytes(o) >> 20, o.log_mb,
        std::string(buffer::eviction_name(o.eviction)).c_str());
  }
  std::printf(
      "# repetitions: %u, fresh stores each, loaded in a rotated order; cells: median "
      "[min-max]; x dram: the ratio to dram\n#   in the same repetition. ns/op: CPU = the CPU "
      "time (user + system) of the threads that ran the operations, per operation,\n#   which "
      "leaves out time they were not running (the machine is shared); wall = wall time x "
      "threads / operations\n\n",
      o.repetitions);
  std::fflush(stdout);

  std::FILE* csv = nullptr;
  if (!o.csv.empty()) {
    csv = std::fopen(o.csv.c_str(), "w");
    if (csv == nullptr) fail("cannot write " + o.csv);
    std::fprintf(csv,
                 "engine,rep,n,keys,value_size,phase,threads,ops,cpu_ns_per_op,wall_ns_per_op,"
                 "mops,buffer_misses,log_units,frames,pages_in_use,pool_percent\n");
  }
  auto cell = [](const std::optional<std::uint64_t>& v) {
    return v ? std::to_string(*v) : std::string("n/a");
  };

  std::printf("%-15s %3s %9s %9s", "engine", "rep", "set_cpu", "set_wall");
  for (unsigned t : o.threads) std::printf(" %9s%-2u %9s%-2u", "get_cpu_t", t, "get_wall_t", t);
  std::printf(" %12s %10s\n", "misses(get)", "log(get)");
  std::map<std::string, std::vector<Run>> runs;
  for (unsigned rep = 1; rep <= o.repetitions; ++rep) {
    const std::vector<Run> rep_runs = repetition(o, keys, load_order, rep);
    for (std::size_t e = 0; e < o.engines.size(); ++e) {
      const EngineSpec& spec = o.engines[e];
      const Run& r = rep_runs[e];
      runs[spec.label].push_back(r);
      std::printf("%-15s %3u %9.1f %9.1f", spec.label.c_str(), rep, r.set_ns, r.set_wall_ns);
      for (unsigned t : o.threads)
        std::printf(" %11.1f %11.1f", r.get_ns.at(t), r.get_wall_ns.at(t));
      std::printf(" %12s %10s\n", cell(r.misses_during_gets).c_str(),
                  cell(r.log_units_during_gets).c_str());
      std::fflush(stdout);
      if (csv != nullptr) {
        const std::string key_kind = key_label(o);
        const std::string paged = r.frames ? cell(r.frames) + "," + cell(r.pages_in_use) : ",";
        char percent[32] = "";
        if (spec.paged) std::snprintf(percent, sizeof percent, "%g", o.buffer_pool_percent);
        std::fprintf(csv, "%s,%u,%zu,%s,%zu,set,1,%zu,%.1f,%.1f,%.4f,,,%s,%s\n", spec.label.c_str(),
                     rep, o.n, key_kind.c_str(), o.value_size, o.n, r.set_ns, r.set_wall_ns,
                     1000.0 / r.set_wall_ns, paged.c_str(), percent);
        for (unsigned t : o.threads) {
          std::fprintf(csv, "%s,%u,%zu,%s,%zu,get,%u,%zu,%.1f,%.1f,%.4f,%s,%s,%s,%s\n",
                       spec.label.c_str(), rep, o.n, key_kind.c_str(), o.value_size, t, o.gets * t,
                       r.get_ns.at(t), r.get_wall_ns.at(t), r.get_mops.at(t),
                       r.misses_during_gets ? cell(r.misses_during_gets).c_str() : "",
                       r.log_units_during_gets ? cell(r.log_units_during_gets).c_str() : "",
                       paged.c_str(), percent);
        }
        std::fflush(csv);
      }
    }
  }
  if (csv != nullptr) std::fclose(csv);
  if (!o.stats_csv.empty()) {
    std::ofstream out(o.stats_csv);
    out << "engine,rep,stat,value\n";
    for (const EngineSpec& spec : o.engines) {
      const std::vector<Run>& rs = runs.at(spec.label);
      for (std::size_t i = 0; i < rs.size(); ++i) {
        for (const auto& [name, value] : rs[i].stats) {
          if (value.find_first_of(",\"\n") == std::string::npos) {
            out << spec.label << ',' << i + 1 << ',' << name << ',' << value << '\n';
          }
        }
      }
    }
    if (!out) fail("cannot write " + o.stats_csv);
  }

  // The summary: per engine and phase, the median [min-max] and the ratio to dram.
  const bool have_dram = runs.count("dram") != 0;
  const std::vector<Run>* dram = have_dram ? &runs.at("dram") : nullptr;
  auto ratios = [&](const std::vector<Run>& rs, auto value) {
    std::vector<double> r;
    for (std::size_t i = 0; i < rs.size(); ++i) r.push_back(value(rs[i]) / value((*dram)[i]));
    return spread(r);
  };
  auto table = [&](const char* title, auto set_value, auto get_value, bool mops) {
    std::printf("\n%s\n%-15s %24s %18s", title, "engine", "SET ns/op", "x dram");
    for (unsigned t : o.threads) {
      std::printf(" %20s%-2u %18s", "GET ns/op, threads ", t, "x dram");
      if (mops) std::printf(" %18s%-2u", "Mops/s, threads ", t);
    }
    std::printf("\n");
    for (const EngineSpec& spec : o.engines) {
      const std::vector<Run>& rs = runs.at(spec.label);
      auto values = [&](auto value) {
        std::vector<double> v;
        for (const Run& r : rs) v.push_back(value(r));
        return format_spread(spread(v), "%.1f");
      };
      auto ratio = [&](auto value) {
        return dram == nullptr ? std::string("-") : format_spread(ratios(rs, value), "%.2f");
      };
      std::printf("%-15s %24s %18s", spec.label.c_str(), values(set_value).c_str(),
                  ratio(set_value).c_str());
      for (unsigned t : o.threads) {
        const auto get = [&get_value, t](const Run& r) { return get_value(r, t); };
        std::printf(" %22s %18s", values(get).c_str(), ratio(get).c_str());
        if (mops) {
          std::vector<double> v;
          for (const Run& r : rs) v.push_back(r.get_mops.at(t));
          std::printf(" %20s", format_spread(spread(v), "%.2f").c_str());
        }
      }
      std::printf("\n");
    }
  };
  table(
      "CPU time", [](const Run& r) { return r.set_ns; },
      [](const Run& r, unsigned t) { return r.get_ns.at(t); }, false);
  table(
      "wall time", [](const Run& r) { return r.set_wall_ns; },
      [](const Run& r, unsigned t) { return r.get_wall_ns.at(t); }, true);

  // Residency of the paged engines: the claim "fully resident" is checked, not assumed.
  bool all_resident = true;
  std::map<std::string, bool> resident_of;
  std::printf("\n");
  for (const EngineSpec& spec : o.engines) {
    if (!spec.paged) continue;
    std::uint64_t misses = 0, units = 0, pages = 0, frames = 0, warm = 0;
    for (const Run& r : runs.at(spec.label)) {
      misses = std::max(misses, r.misses_during_gets.value_or(0));
      units = std::max(units, r.log_units_during_gets.value_or(0));
      pages = std::max(pages, r.pages_in_use.value_or(0));
      frames = std::max(frames, r.frames.value_or(0));
      warm = std::max(warm, r.misses_after_warmup.value_or(0));
    }
    const bool resident = misses == 0 && pages <= frames;
    // Only a pool meant to hold everything must; a smaller one is meant to miss.
    if (o.buffer_pool_percent == 0 || o.buffer_pool_percent >= 100) {
      all_resident = all_resident && resident;
    }
    resident_of[spec.label] = resident;
    std::uint64_t gets = 0;
    for (unsigned t : o.threads) gets += o.gets * t;
    std::printf(
        "%s: %llu pages in use, %llu frames (%.1f%% of the pages); buffer misses during the "
        "measured GETs: %llu (%.3f per GET), after load and warm-up: %llu; log units during GETs: "
        "%llu; page file O_DIRECT: %s (max over repetitions) -> %s\n",
        spec.label.c_str(), static_cast<unsigned long long>(pages),
        static_cast<unsigned long long>(frames),
        pages == 0 ? 0.0 : 100.0 * static_cast<double>(frames) / static_cast<double>(pages),
        static_cast<unsigned long long>(misses),
        static_cast<double>(misses) / static_cast<double>(gets),
        static_cast<unsigned long long>(warm), static_cast<unsigned long long>(units),
        runs.at(spec.label).front().direct_io.c_str(),
        resident ? "fully resident" : "NOT fully resident");
  }
  if (have_dram) {
    const unsigned t = o.threads.front();
    for (const EngineSpec& spec : o.engines) {
      if (!spec.paged) continue;
      const std::vector<Run>& rs = runs.at(spec.label);
      const double cpu = ratios(rs, [t](const Run& r) { return r.get_ns.at(t); }).median;
      const double wall = ratios(rs, [t](const Run& r) { return r.get_wall_ns.at(t); }).median;
      std::printf(
          "acceptance (GET on %u thread%s within 1.5x of dram): %s %.2fx (CPU), %.2fx (wall) -> "
          "%s\n",
          t, t == 1 ? "" : "s", spec.label.c_str(), cpu, wall,
          !resident_of[spec.label] ? "not the case asked about (not fully resident)"
          : cpu <= 1.5             ? "met"
                                   : "NOT met");
    }
  }
  std::printf("# load average at end: %s\n", load_average().c_str());
  return all_resident ? 0 : 3;
}

}  // namespace
}  // namespace pmcached::bench

int main(int argc, char** argv) {
  using namespace pmcached;
  CLI::App app{"store_bench: the store in-process per engine (SET, GET), bptree vs dram"};
  bench::Options o;
  std::string engines = "dram,wort,bptree:hash,bptree:swizzle", threads = "1,2", eviction = "clock";
  app.add_option("--engines", engines,
                 "engines; a paged one as engine[:hash|:swizzle][:tN] (page table, b2tree "
                 "threshold)");
  app.add_option("--n", o.n, "keys")->check(CLI::Range(std::size_t{1}, std::size_t{1} << 31));
  app.add_option("--value-size", o.value_size, "value bytes")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 19));
  app.add_option("--keys", o.keys,
                 "text (\"key%08d\"), be64 (8-byte big-endian 1..N) or random (8 random bytes)");
  app.add_option("--key-file", o.key_file,
                 "keys from this file, one per line (scripts/make-keysets.py); --n: the first N");
  app.add_option("--buffer-pool-percent", o.buffer_pool_percent,
                 "reopen paged engines after the load with a pool of P% of the pages in use")
      ->check(CLI::Range(0.001, 1000.0));
  app.add_option("--gets", o.gets, "measured GETs per thread")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 32));
  app.add_option("--burst", o.burst, "GETs per thread before the next engine's turn")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 32));
  app.add_option("--threads", threads, "GET thread counts, e.g. 1,2");
  app.add_option("--repetitions", o.repetitions, "fresh stores per engine")
      ->check(CLI::Range(1u, 100u));
  app.add_option("--dir", o.dir, "where the pools and page files go (default /dev/shm)");
  app.add_option("--buffer-pool-mb", o.buffer_pool_mb, "paged engines' pool (0: from N)");
  app.add_option("--page-size", o.page_size, "paged engines' page size")
      ->check(CLI::Range(buffer::kMinPageSize, buffer::kMaxPageSize));
  app.add_option("--log-mb", o.log_mb, "paged engines' redo log in MiB (default 64, as pmcached)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 16));
  app.add_option("--eviction", eviction, "random, clock, gclock, car, lru");
  app.add_option("--seed", o.seed, "load order and GET key seed");
  app.add_option("--csv", o.csv, "write one row per engine, repetition and phase to this file");
  app.add_option("--stats-csv", o.stats_csv,
                 "write every engine's stats after the GETs (engine,rep,stat,value) to this file");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (o.keys != "text" && o.keys != "be64" && o.keys != "random") {
    std::fprintf(stderr, "unknown key format '%s' (valid: text, be64, random)\n", o.keys.c_str());
    return 2;
  }
  const auto kind = buffer::parse_eviction(eviction);
  if (!kind) {
    std::fprintf(stderr, "unknown policy '%s' (valid: random, clock, gclock, car, lru)\n",
                 eviction.c_str());
    return 2;
  }
  o.eviction = *kind;
  for (const std::string& t : bench::split_list(threads)) {
    const unsigned count = static_cast<unsigned>(std::stoul(t));
    if (count == 0 || count > 64) {
      std::fprintf(stderr, "thread count %s is not in 1..64\n", t.c_str());
      return 2;
    }
    o.threads.push_back(count);
  }
  o.n_given = app.count("--n") != 0;
  for (const std::string& label : bench::split_list(engines)) {
    try {
      o.engines.push_back(bench::parse_engine_spec(label));
    } catch (const std::invalid_argument& error) {
      std::fprintf(stderr, "%s\n", error.what());
      return 2;
    }
  }
  if (o.engines.empty() || o.threads.empty()) {
    std::fprintf(stderr, "nothing to run: give --engines and --threads\n");
    return 2;
  }
  return bench::bench(std::move(o));
}

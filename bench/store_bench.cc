// store_bench: the whole store in-process, opened through engine::open_store() as the server
// opens it, bptree against the dram engine (issue 18: "fully resident, bptree GET in-process
// within 1.5x of dram"). No network, no protocol parsing. A measuring program, not a test.
//
// For each engine (default dram, wort, bptree with the hash page table, bptree with swizzling),
// every repetition on a fresh store whose pool and page file are in --dir (default /dev/shm):
//   SET  N keys in a random order on one thread (values --value-size bytes, default 100);
//   warm one GET of every key: each must hit, and it sets the items' fetched bit, so that the
//        measured GETs change nothing (bptree logs a hint when a bit changes);
//   GET  --gets random existing keys per thread, for each count of --threads (default 1,2), the
//        visitor copying the value out as a server would into its reply.
// bptree's buffer pool is sized to hold the whole data (--buffer-pool-mb), so it is fully
// resident: the program prints the buffer misses and redo-log units during the measured GETs
// (both must be 0) and the pages in use against the frames.
//   store_bench [--engines dram,wort,bptree:hash,bptree:swizzle] [--n N] [--value-size B]
//               [--keys text|be64|random] [--gets G] [--threads 1,2] [--repetitions R] [--dir DIR]
//               [--buffer-pool-mb M] [--page-size B] [--eviction P] [--seed S] [--csv FILE]
// Key formats: text "key%08d" (0..N-1) and be64 (8-byte big-endian 1..N) are what clients use,
// and both share their first 4 bytes across all keys; random (8-byte big-endian, a bijective mix
// of 1..N, so distinct) differs in the first bytes, which shows what key-prefix comparisons cost.
// Engines run in a rotated order in each repetition, so a drift of the machine spreads over all
// of them; the ratio to dram is taken per repetition (same keys, same moment), then summarised.
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

#include "bench/machine_info.h"
#include "engine/open_store.h"
#include "engine/pm/persistence.h"

namespace pmcached::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;

// "dram", "wort", "bptree:hash", "bptree:swizzle": an engine and, for a paged one, its page table.
struct EngineSpec {
  std::string label, engine;
  buffer::PageTableKind page_table = buffer::PageTableKind::kHash;
  bool paged = false;
};

struct Options {
  std::vector<EngineSpec> engines;
  std::size_t n = 200000, value_size = 100, gets = 1000000;
  std::string keys = "text";  // text, be64 or random
  std::vector<unsigned> threads;
  unsigned repetitions = 5;
  std::string dir = "/dev/shm";
  std::size_t buffer_pool_mb = 0;  // 0: sized from N
  std::size_t page_size = buffer::kDefaultPageSize;
  buffer::EvictionKind eviction = buffer::EvictionKind::kClock;
  std::uint64_t seed = 18;
  std::string csv;
};

// One engine in one repetition.
struct Run {
  double set_ns = 0;
  std::map<unsigned, double> get_ns;    // per thread count: wall time x threads / operations
  std::map<unsigned, double> get_mops;  // per thread count: all threads together
  // Paged engines only (nullopt otherwise).
  std::optional<std::uint64_t> misses_after_warmup, misses_during_gets, log_units_during_gets;
  std::optional<std::uint64_t> frames, pages_in_use;
  std::string direct_io = "n/a";
};

using Stats = std::map<std::string, std::string>;

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

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "store_bench: %s\n", what.c_str());
  std::exit(1);
}

// Runs `per_thread` GETs on each of `threads` threads, all released at once; returns the wall
// time. Every GET must hit and see a value of the stored size whose first byte is the key's.
double timed_gets(engine::Store& store, const std::vector<std::string>& keys, unsigned threads,
                  std::size_t per_thread, std::size_t value_size, std::uint64_t seed) {
  std::vector<std::vector<std::uint32_t>> picks(threads);
  for (unsigned t = 0; t < threads; ++t) {
    std::mt19937_64 rng(seed * 7919 + t);
    picks[t].resize(per_thread);
    for (std::uint32_t& p : picks[t]) p = static_cast<std::uint32_t>(rng() % keys.size());
  }
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false};
  std::atomic<std::uint64_t> wrong{0};
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
      for (std::uint32_t p : picks[t]) {
        request.key = keys[p];
        copy.clear();
        const bool hit = store.get(request, visit).status == engine::StoreStatus::kHit;
        bad += !hit || copy.size() != value_size || copy[0] != static_cast<char>('a' + p % 26);
      }
      wrong.fetch_add(bad, std::memory_order_relaxed);
    });
  }
  while (ready.load(std::memory_order_acquire) != threads) std::this_thread::yield();
  const auto started = SteadyClock::now();
  go.store(true, std::memory_order_release);
  for (std::thread& w : workers) w.join();
  const double ns = ns_between(started, SteadyClock::now());
  if (wrong.load() != 0) {
    fail(std::to_string(wrong.load()) + " GETs of existing keys missed or saw a wrong value");
  }
  return ns;
}

// splitmix64's finaliser: a bijection on 64-bit integers, so distinct inputs stay distinct.
std::uint64_t mix64(std::uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

const char* key_description(const std::string& keys) {
  if (keys == "text") return "\"key%08d\", 11 B";
  if (keys == "be64") return "8-byte big-endian 1..N";
  return "8-byte big-endian, random (mixed 1..N)";
}

std::size_t buffer_pool_bytes(const Options& o) {
  // About 170 bytes per item in a leaf (record, slot) at half-full pages is ~350; 512 leaves room.
  if (o.buffer_pool_mb != 0) return o.buffer_pool_mb << 20;
  return o.n * 512 + (32u << 20);
}

Run run(const EngineSpec& spec, const Options& o, const std::vector<std::string>& keys,
        const std::vector<std::uint32_t>& load_order, unsigned rep) {
  const std::string pool_path =
      o.dir + "/store_bench-" + std::to_string(::getpid()) + "-" + spec.label + ".pool";
  const std::string page_file = pool_path + ".pages";
  std::filesystem::remove(pool_path);
  std::filesystem::remove(page_file);

  engine::StoreConfig config;
  config.engine = spec.engine;
  config.pool_path = pool_path;
  config.pool_bytes = o.n * 512 + (128u << 20);  // items and index (wort), the redo log (bptree)
  config.options.memory_limit_bytes = o.n * 512 + (64u << 20);  // dram: nothing is evicted
  config.paged.page_file = page_file;
  config.paged.page_size = o.page_size;
  config.paged.buffer_pool_bytes = buffer_pool_bytes(o);
  config.paged.page_file_bytes = std::max<std::uint64_t>(1ull << 30, 4 * buffer_pool_bytes(o));
  config.paged.page_table = spec.page_table;
  config.paged.eviction = o.eviction;
  engine::SystemClock clock;
  std::unique_ptr<engine::OpenStore> db;
  try {
    db = engine::open_store(std::move(config), clock);
  } catch (const std::exception& error) {
    fail(spec.label + ": " + error.what());
  }
  engine::Store& store = db->store();
  Run out;

  std::string value(o.value_size, 'v');
  engine::StoreRequest set;
  set.mode = engine::StoreMode::kSet;
  auto started = SteadyClock::now();
  for (std::uint32_t i : load_order) {
    value[0] = static_cast<char>('a' + i % 26);
    set.key = keys[i];
    set.value = value;
    if (store.store(set).status != engine::StoreStatus::kStored) {
      fail(spec.label + ": SET of key " + std::to_string(i) + " was not stored");
    }
  }
  out.set_ns = ns_between(started, SteadyClock::now()) / static_cast<double>(keys.size());

  // Warm-up: every key once, in key-index order.
  std::size_t warm_misses = 0;
  engine::GetRequest get;
  for (const std::string& key : keys) {
    get.key = key;
    warm_misses += store.get(get, nullptr).status != engine::StoreStatus::kHit;
  }
  if (warm_misses != 0) fail(spec.label + ": " + std::to_string(warm_misses) + " keys missing");

  const Stats before = stats_of(store);
  for (unsigned threads : o.threads) {
    const double ns =
        timed_gets(store, keys, threads, o.gets, o.value_size, o.seed + rep * 100 + threads);
    const double ops = static_cast<double>(o.gets) * threads;
    out.get_ns[threads] = ns * threads / ops;
    out.get_mops[threads] = ops / ns * 1000.0;
  }
  const Stats after = stats_of(store);
  if (spec.paged) {
    out.misses_after_warmup = number(before, "buffer_misses");
    const auto misses = number(after, "buffer_misses");
    const auto units_before = number(before, "log_units"), units_after = number(after, "log_units");
    if (misses && out.misses_after_warmup)
      out.misses_during_gets = *misses - *out.misses_after_warmup;
    if (units_before && units_after) out.log_units_during_gets = *units_after - *units_before;
    out.frames = number(after, "buffer_frames");
    out.pages_in_use = number(after, "pages_in_use");
    if (after.count("page_file_direct_io") != 0) out.direct_io = after.at("page_file_direct_io");
  }
  db->close();
  db.reset();
  std::filesystem::remove(pool_path);
  std::filesystem::remove(page_file);
  return out;
}

struct Spread {
  double median = 0, min = 0, max = 0;
};

Spread spread(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  const double median = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return {median, v.front(), v.back()};
}

std::string format(const Spread& s, const char* fmt) {
  char m[32], lo[32], hi[32], out[112];
  std::snprintf(m, sizeof m, fmt, s.median);
  std::snprintf(lo, sizeof lo, fmt, s.min);
  std::snprintf(hi, sizeof hi, fmt, s.max);
  std::snprintf(out, sizeof out, "%s [%s-%s]", m, lo, hi);
  return out;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    if (end > begin) out.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  if (!(in >> one >> five >> fifteen)) return "unknown";
  return one + " " + five + " " + fifteen;
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

int bench(const Options& o) {
  std::vector<std::string> keys(o.n);
  for (std::size_t i = 0; i < o.n; ++i) {
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
      "threads, the visitor copying the value\n",
      o.n, key_description(o.keys), o.value_size, o.gets, threads_text.c_str());
  std::printf(
      "# paged engines: page %zu B, buffer pool %zu MiB (meant to hold all the data), eviction "
      "%s\n",
      o.page_size, buffer_pool_bytes(o) >> 20,
      std::string(buffer::eviction_name(o.eviction)).c_str());
  std::printf(
      "# repetitions: %u, a fresh store each, engines in a rotated order; cells: median "
      "[min-max];\n#   ns/op = wall time x threads / operations (one thread's time per "
      "operation); x dram = ratio to dram in the same repetition\n\n",
      o.repetitions);
  std::fflush(stdout);

  std::FILE* csv = nullptr;
  if (!o.csv.empty()) {
    csv = std::fopen(o.csv.c_str(), "w");
    if (csv == nullptr) fail("cannot write " + o.csv);
    std::fprintf(csv,
                 "engine,rep,n,keys,value_size,phase,threads,ops,ns_per_op,mops,"
                 "buffer_misses,log_units\n");
  }
  auto cell = [](const std::optional<std::uint64_t>& v) {
    return v ? std::to_string(*v) : std::string("n/a");
  };

  std::printf("%-15s %3s %9s", "engine", "rep", "set_ns");
  for (unsigned t : o.threads) std::printf(" %8s%-2u", "get_ns_t", t);
  std::printf(" %12s %10s\n", "misses(get)", "log(get)");
  std::map<std::string, std::vector<Run>> runs;
  for (unsigned rep = 1; rep <= o.repetitions; ++rep) {
    for (std::size_t k = 0; k < o.engines.size(); ++k) {
      const EngineSpec& spec = o.engines[(k + rep - 1) % o.engines.size()];
      const Run r = run(spec, o, keys, load_order, rep);
      runs[spec.label].push_back(r);
      std::printf("%-15s %3u %9.1f", spec.label.c_str(), rep, r.set_ns);
      for (unsigned t : o.threads) std::printf(" %10.1f", r.get_ns.at(t));
      std::printf(" %12s %10s\n", cell(r.misses_during_gets).c_str(),
                  cell(r.log_units_during_gets).c_str());
      std::fflush(stdout);
      if (csv != nullptr) {
        const char* key_kind = o.keys.c_str();
        std::fprintf(csv, "%s,%u,%zu,%s,%zu,set,1,%zu,%.1f,%.4f,,\n", spec.label.c_str(), rep, o.n,
                     key_kind, o.value_size, o.n, r.set_ns, 1000.0 / r.set_ns);
        for (unsigned t : o.threads) {
          std::fprintf(csv, "%s,%u,%zu,%s,%zu,get,%u,%zu,%.1f,%.4f,%s,%s\n", spec.label.c_str(),
                       rep, o.n, key_kind, o.value_size, t, o.gets * t, r.get_ns.at(t),
                       r.get_mops.at(t),
                       r.misses_during_gets ? cell(r.misses_during_gets).c_str() : "",
                       r.log_units_during_gets ? cell(r.log_units_during_gets).c_str() : "");
        }
        std::fflush(csv);
      }
    }
  }
  if (csv != nullptr) std::fclose(csv);

  // The summary: per engine and phase, the median [min-max] and the ratio to dram.
  const bool have_dram = runs.count("dram") != 0;
  const std::vector<Run>* dram = have_dram ? &runs.at("dram") : nullptr;
  auto ratio = [&](const std::vector<Run>& rs, auto value) -> std::string {
    if (dram == nullptr) return "-";
    std::vector<double> r;
    for (std::size_t i = 0; i < rs.size(); ++i) r.push_back(value(rs[i]) / value((*dram)[i]));
    return format(spread(r), "%.2f");
  };
  std::printf("\n%-15s %24s %20s", "engine", "SET ns/op", "x dram");
  for (unsigned t : o.threads) {
    std::printf(" %20s%-2u %20s %18s%-2u", "GET ns/op, threads ", t, "x dram", "Mops/s, threads ",
                t);
  }
  std::printf("\n");
  for (const EngineSpec& spec : o.engines) {
    const std::vector<Run>& rs = runs.at(spec.label);
    auto values = [&](auto value) {
      std::vector<double> v;
      for (const Run& r : rs) v.push_back(value(r));
      return spread(v);
    };
    const auto set_ns = [](const Run& r) { return r.set_ns; };
    std::printf("%-15s %24s %20s", spec.label.c_str(), format(values(set_ns), "%.1f").c_str(),
                ratio(rs, set_ns).c_str());
    for (unsigned t : o.threads) {
      const auto get_ns = [t](const Run& r) { return r.get_ns.at(t); };
      const auto mops = [t](const Run& r) { return r.get_mops.at(t); };
      std::printf(" %22s %20s %20s", format(values(get_ns), "%.1f").c_str(),
                  ratio(rs, get_ns).c_str(), format(values(mops), "%.2f").c_str());
    }
    std::printf("\n");
  }

  // Residency of the paged engines: the claim "fully resident" is checked, not assumed.
  bool all_resident = true;
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
    all_resident = all_resident && resident;
    std::printf(
        "%s: %llu pages in use, %llu frames; buffer misses during the measured GETs: %llu, "
        "after load and warm-up: %llu; log units during GETs: %llu; page file O_DIRECT: %s "
        "(max over repetitions) -> %s\n",
        spec.label.c_str(), static_cast<unsigned long long>(pages),
        static_cast<unsigned long long>(frames), static_cast<unsigned long long>(misses),
        static_cast<unsigned long long>(warm), static_cast<unsigned long long>(units),
        runs.at(spec.label).front().direct_io.c_str(),
        resident ? "fully resident" : "NOT fully resident");
  }
  if (have_dram && !o.threads.empty()) {
    const unsigned t = o.threads.front();
    for (const EngineSpec& spec : o.engines) {
      if (!spec.paged) continue;
      std::vector<double> r;
      const std::vector<Run>& rs = runs.at(spec.label);
      for (std::size_t i = 0; i < rs.size(); ++i)
        r.push_back(rs[i].get_ns.at(t) / (*dram)[i].get_ns.at(t));
      const double median = spread(r).median;
      std::printf("acceptance (GET, %u thread%s, within 1.5x of dram): %s %.2fx -> %s\n", t,
                  t == 1 ? "" : "s", spec.label.c_str(), median, median <= 1.5 ? "met" : "NOT met");
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
                 "engines; a paged one as engine:hash or engine:swizzle (page table)");
  app.add_option("--n", o.n, "keys")->check(CLI::Range(std::size_t{1}, std::size_t{1} << 31));
  app.add_option("--value-size", o.value_size, "value bytes")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 19));
  app.add_option("--keys", o.keys,
                 "text (\"key%08d\"), be64 (8-byte big-endian 1..N) or random (8 random bytes)");
  app.add_option("--gets", o.gets, "measured GETs per thread")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 32));
  app.add_option("--threads", threads, "GET thread counts, e.g. 1,2");
  app.add_option("--repetitions", o.repetitions, "fresh stores per engine")
      ->check(CLI::Range(1u, 100u));
  app.add_option("--dir", o.dir, "where the pools and page files go (default /dev/shm)");
  app.add_option("--buffer-pool-mb", o.buffer_pool_mb, "paged engines' pool (0: from N)");
  app.add_option("--page-size", o.page_size, "paged engines' page size")
      ->check(CLI::Range(buffer::kMinPageSize, buffer::kMaxPageSize));
  app.add_option("--eviction", eviction, "random, clock, gclock, car, lru");
  app.add_option("--seed", o.seed, "load order and GET key seed");
  app.add_option("--csv", o.csv, "write one row per engine, repetition and phase to this file");
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
  for (const std::string& label : bench::split_list(engines)) {
    bench::EngineSpec spec;
    spec.label = label;
    const std::size_t colon = label.find(':');
    spec.engine = label.substr(0, colon);
    const engine::EngineInfo* info = engine::find_engine(spec.engine);
    if (info == nullptr) {
      std::fprintf(stderr, "unknown engine '%s' (valid: %s)\n", spec.engine.c_str(),
                   engine::engine_names().c_str());
      return 2;
    }
    spec.paged = static_cast<bool>(info->create_records);
    if (colon != std::string::npos) {
      const auto table = buffer::parse_page_table(label.substr(colon + 1));
      if (!spec.paged || !table) {
        std::fprintf(stderr, "'%s': only a paged engine takes a page table (hash, swizzle)\n",
                     label.c_str());
        return 2;
      }
      spec.page_table = *table;
    }
    o.engines.push_back(spec);
  }
  if (o.engines.empty() || o.threads.empty()) {
    std::fprintf(stderr, "nothing to run: give --engines and --threads\n");
    return 2;
  }
  return bench::bench(o);
}

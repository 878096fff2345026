// tree_bench: seed 004 §4.3's experiment on the trees themselves: point lookups and inserts of
// string keys in the paged B+-tree (bptree) and the B2-tree (b2tree, the same tree with an
// embedded trie in every page), fully resident, single thread. No store, no item records, no
// redo log: each key maps to an 8-byte payload, as in the paper, so the figures are the
// index's and the ratio is the one the paper reports. A measuring program, not a test.
//
//   tree_bench --key-file FILE [--n N] [--page-size B] [--thresholds 0,8,16,32,64,128]
//              [--lookups L] [--repetitions R] [--page-table hash|swizzle] [--stream-keys]
//              [--dir DIR] [--csv FILE]
//
// Threshold 0 is bptree; every other value a b2tree with that many slots per range. Each
// repetition builds every tree anew from the keys in one shuffled order (the same for all), then
// looks up L keys drawn at random (the same sequence for all). The trees take turns: each phase
// runs in 40 turns, every tree doing its share of a turn in a rotated order, so a slow spell of
// the machine slows them alike. Times are the thread's CPU time per operation; the ratio to
// bptree is taken per repetition. Every tree of a repetition is resident at once (memory: the
// trees' pages together).
// The looked-up keys are read from the key set's strings, scattered over the heap (a cache miss
// or two per lookup, the same for every tree); --stream-keys copies them, in lookup order, into
// one buffer read front to back, as a server reads keys from its connections' buffers.
// Prints the embedded trees' size per page (mean and max, of the page size) from a walk.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/csv_file.h"
#include "bench/key_file.h"
#include "bench/list_option.h"
#include "bench/machine_info.h"
#include "bench/spread.h"
#include "engine/bptree/btree.h"
#include "engine/bptree/node.h"
#include "engine/buffer/buffer_manager.h"
#include "engine/buffer/mini_transaction.h"
#include "engine/buffer/page_file.h"

namespace pmcached::bench {
namespace {

using engine::RecordBuffer;
using engine::bptree::BTree;

struct Options {
  std::string key_file, dir = "/dev/shm", csv;
  buffer::PageTableKind page_table = buffer::PageTableKind::kHash;
  std::size_t n = 0, page_size = 65536, lookups = 2'000'000;
  unsigned repetitions = 3;
  bool stream_keys = false;
  std::vector<unsigned> thresholds = {0, 32};
};

double thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

std::string label(unsigned threshold) {
  return threshold == 0 ? "bptree" : "b2tree:t" + std::to_string(threshold);
}

// One tree on its own page file, every page resident.
class Subject {
 public:
  Subject(const Options& o, unsigned threshold, std::size_t pages_needed, int id)
      : path_(o.dir + "/tree_bench." + std::to_string(::getpid()) + "." + std::to_string(id)) {
    buffer::PageFileOptions f;
    f.path = path_;
    f.page_size = o.page_size;
    f.max_bytes = static_cast<std::uint64_t>(pages_needed + 64) * o.page_size;
    f.direct_io = false;
    file_ = buffer::PageFile::open(f);
    buffer::BufferOptions b;
    b.frames = pages_needed + 64;
    b.child_slots = engine::bptree::for_each_child_slot;
    b.page_table = o.page_table;
    buffers_ = std::make_unique<buffer::BufferManager>(*file_, b);
    tree_ = std::make_unique<BTree>(*buffers_, threshold);
    buffer::MiniTransaction txn(*buffers_, nullptr);
    tree_->format(txn);
    (void)txn.finish();
    tree_->load();
  }
  ~Subject() {
    tree_.reset();
    buffers_.reset();
    file_.reset();
    std::filesystem::remove(path_);
  }
  BTree& tree() { return *tree_; }
  const buffer::BufferManager& buffers() const { return *buffers_; }

 private:
  std::string path_;
  std::unique_ptr<buffer::PageFile> file_;
  std::unique_ptr<buffer::BufferManager> buffers_;
  std::unique_ptr<BTree> tree_;
};

struct Run {
  double insert_ns = 0, lookup_ns = 0;
  std::size_t pages = 0, tree_bytes_max = 0;
  double tree_bytes_mean = 0, ranges_mean = 0;
};

// Each phase (the inserts, then the lookups) runs in this many turns: every tree does its share of
// a turn before the next turn starts. A slow spell of a shared machine then slows every tree
// alike, and their ratio, which is what the benchmark reports, stays put.
constexpr std::size_t kTurns = 40;

// [begin, end) of turn `turn` of `n` operations.
std::pair<std::size_t, std::size_t> turn_range(std::size_t n, std::size_t turn) {
  return {n * turn / kTurns, n * (turn + 1) / kTurns};
}

// One repetition: a fresh tree per threshold, built from the same keys in the same order, then
// the same lookups, the trees taking turns (in `order`).
std::vector<Run> repetition(const Options& o, const std::vector<std::string>& keys,
                            const std::vector<std::uint32_t>& load_order,
                            const std::vector<std::uint32_t>& probes,
                            const std::vector<std::size_t>& order) {
  // Generous: a page holds at least a quarter of its bytes in entries.
  std::size_t bytes = 0;
  for (const std::string& k : keys) bytes += k.size() + 8 + 12;
  std::vector<std::unique_ptr<Subject>> subjects;
  for (std::size_t t = 0; t < o.thresholds.size(); ++t) {
    subjects.push_back(std::make_unique<Subject>(o, o.thresholds[t], bytes * 4 / o.page_size + 16,
                                                 static_cast<int>(t)));
  }
  std::vector<Run> runs(o.thresholds.size());
  for (std::size_t turn = 0; turn < kTurns; ++turn) {
    const auto [begin, end] = turn_range(load_order.size(), turn);
    for (const std::size_t t : order) {
      Subject& s = *subjects[t];
      const double t0 = thread_cpu_ns();
      for (std::size_t at = begin; at < end; ++at) {
        const std::uint32_t i = load_order[at];
        buffer::MiniTransaction txn(const_cast<buffer::BufferManager&>(s.buffers()), nullptr);
        const std::uint64_t payload = i;
        if (s.tree().upsert(txn, keys[i], {reinterpret_cast<const std::byte*>(&payload), 8}) !=
            engine::WriteStatus::kInserted) {
          std::fprintf(stderr, "tree_bench: insert of key %u failed\n", i);
          std::exit(1);
        }
        (void)txn.finish();
      }
      runs[t].insert_ns += thread_cpu_ns() - t0;
    }
  }
  for (std::size_t t = 0; t < subjects.size(); ++t) {
    runs[t].insert_ns /= static_cast<double>(load_order.size());
    const buffer::BufferStats b = subjects[t]->buffers().stats();
    if (b.misses > b.fixes) std::exit(1);
  }

  // --stream-keys: the probes' keys back to back, each with its length before it.
  std::string stream;
  if (o.stream_keys) {
    for (const std::uint32_t i : probes) {
      stream += static_cast<char>(keys[i].size());
      stream += keys[i];
    }
  }
  RecordBuffer out;
  std::uint64_t check = 0;
  std::size_t turn_at = 0;  // where this turn's keys start in `stream`
  for (std::size_t turn = 0; turn < kTurns; ++turn) {
    const auto [begin, end] = turn_range(probes.size(), turn);
    std::size_t at = turn_at;
    for (const std::size_t t : order) {
      BTree& tree = subjects[t]->tree();
      at = turn_at;  // every tree reads the turn's keys
      const double t0 = thread_cpu_ns();
      for (std::size_t p = begin; p < end; ++p) {
        const std::uint32_t i = probes[p];
        std::string_view key = keys[i];
        if (o.stream_keys) {
          const std::size_t n = static_cast<unsigned char>(stream[at]);
          key = std::string_view(stream).substr(at + 1, n);
          at += 1 + n;
        }
        if (!tree.read(key, out)) {
          std::fprintf(stderr, "tree_bench: key %u not found\n", i);
          std::exit(1);
        }
        std::uint64_t payload;
        std::memcpy(&payload, out.data(), 8);
        check += payload ^ i;
      }
      runs[t].lookup_ns += thread_cpu_ns() - t0;
    }
    turn_at = at;
  }
  if (check != 0) {
    std::fprintf(stderr, "tree_bench: a lookup returned another key's payload\n");
    std::exit(1);
  }
  for (std::size_t t = 0; t < subjects.size(); ++t) {
    Run& run = runs[t];
    run.lookup_ns /= static_cast<double>(probes.size());
    const BTree::TreeShapes shapes = subjects[t]->tree().tree_shapes();
    run.pages = shapes.pages;
    run.tree_bytes_mean = shapes.pages ? static_cast<double>(shapes.bytes) / shapes.pages : 0;
    run.tree_bytes_max = shapes.max_bytes;
    run.ranges_mean = shapes.pages ? static_cast<double>(shapes.ranges) / shapes.pages : 0;
  }
  return runs;
}

int bench(const Options& o) {
  const std::vector<std::string> keys = read_key_file(o.key_file, o.n);
  std::mt19937_64 rng(42);
  std::vector<std::uint32_t> load_order(keys.size());
  for (std::uint32_t i = 0; i < load_order.size(); ++i) load_order[i] = i;
  std::shuffle(load_order.begin(), load_order.end(), rng);
  std::vector<std::uint32_t> probes(o.lookups);
  std::uniform_int_distribution<std::uint32_t> pick(0, static_cast<std::uint32_t>(keys.size() - 1));
  for (std::uint32_t& p : probes) p = pick(rng);

  std::printf(
      "# tree_bench: %zu keys from %s, %zu B pages, %s page table, %zu lookups%s, %u "
      "repetitions\n",
      keys.size(), o.key_file.c_str(), o.page_size,
      std::string(buffer::page_table_name(o.page_table)).c_str(), o.lookups,
      o.stream_keys ? " (keys streamed)" : "", o.repetitions);
  std::printf("# machine: %u x %s, build %s; load average at start: %s\n", cpu_count(),
              cpu_model().c_str(), build_type().c_str(), load_average().c_str());
  std::vector<std::vector<Run>> runs(o.thresholds.size());
  for (unsigned rep = 0; rep < o.repetitions; ++rep) {
    std::vector<std::size_t> order;  // the trees' turns, rotated from one repetition to the next
    for (std::size_t j = 0; j < o.thresholds.size(); ++j) {
      order.push_back((j + rep) % o.thresholds.size());
    }
    const std::vector<Run> rep_runs = repetition(o, keys, load_order, probes, order);
    for (std::size_t t = 0; t < rep_runs.size(); ++t) runs[t].push_back(rep_runs[t]);
  }
  // bptree (threshold 0) is the reference where it ran.
  const auto base = std::find(o.thresholds.begin(), o.thresholds.end(), 0u);
  const std::vector<Run>* ref = base == o.thresholds.end()
                                    ? nullptr
                                    : &runs[static_cast<std::size_t>(base - o.thresholds.begin())];
  std::FILE* csv = nullptr;
  if (!o.csv.empty()) {
    csv = open_csv(o.csv,
                   "tree,threshold,rep,keys,page_size,insert_ns,lookup_ns,pages,"
                   "tree_bytes_mean,tree_bytes_max,ranges_mean\n");
    if (csv == nullptr) return 2;
  }
  std::printf("\n%-14s %24s %24s %20s %20s %8s %22s %8s\n", "tree", "lookup ns", "insert ns",
              "lookup x bptree", "insert x bptree", "pages", "tree bytes mean/max", "ranges");
  for (std::size_t t = 0; t < o.thresholds.size(); ++t) {
    std::vector<double> lookup, insert, lookup_ratio, insert_ratio;
    for (std::size_t r = 0; r < runs[t].size(); ++r) {
      const Run& run = runs[t][r];
      lookup.push_back(run.lookup_ns);
      insert.push_back(run.insert_ns);
      if (ref != nullptr) {
        lookup_ratio.push_back((*ref)[r].lookup_ns / run.lookup_ns);
        insert_ratio.push_back((*ref)[r].insert_ns / run.insert_ns);
      }
      if (csv != nullptr) {
        std::fprintf(csv, "%s,%u,%zu,%zu,%zu,%.1f,%.1f,%zu,%.1f,%zu,%.2f\n",
                     label(o.thresholds[t]).c_str(), o.thresholds[t], r + 1, keys.size(),
                     o.page_size, run.insert_ns, run.lookup_ns, run.pages, run.tree_bytes_mean,
                     run.tree_bytes_max, run.ranges_mean);
      }
    }
    const Run& last = runs[t].back();
    char shape[64];
    std::snprintf(shape, sizeof shape, "%.0f (%.2f%%) / %zu", last.tree_bytes_mean,
                  100.0 * last.tree_bytes_mean / static_cast<double>(o.page_size),
                  last.tree_bytes_max);
    std::printf("%-14s %24s %24s %20s %20s %8zu %22s %8.1f\n", label(o.thresholds[t]).c_str(),
                format_spread(spread(lookup), "%.1f").c_str(),
                format_spread(spread(insert), "%.1f").c_str(),
                ref ? format_spread(spread(lookup_ratio), "%.2f").c_str() : "-",
                ref ? format_spread(spread(insert_ratio), "%.2f").c_str() : "-", last.pages, shape,
                last.ranges_mean);
  }
  if (csv != nullptr) std::fclose(csv);
  std::printf("# ratios: bptree's time over the tree's, per repetition (throughput ratio)\n");
  std::printf("# load average at end: %s\n", load_average().c_str());
  return 0;
}

}  // namespace
}  // namespace pmcached::bench

int main(int argc, char** argv) {
  pmcached::bench::Options o;
  std::string thresholds = "0,32";
  CLI::App app{"tree_bench: bptree and b2tree lookups and inserts in-process (seed 004 §4.3)"};
  app.add_option("--key-file", o.key_file, "keys, one per line (scripts/make-keysets.py)")
      ->required();
  app.add_option("--n", o.n, "use the first N keys (0: all)");
  app.add_option("--page-size", o.page_size, "page size")
      ->check(CLI::IsMember({4096, 8192, 16384, 32768, 65536}));
  app.add_option("--thresholds", thresholds, "0 = bptree, else b2tree's slots per range");
  app.add_option("--lookups", o.lookups, "random lookups per tree and repetition")
      ->check(CLI::PositiveNumber);
  app.add_option("--repetitions", o.repetitions, "fresh trees per repetition")
      ->check(CLI::PositiveNumber);
  std::string page_table = "hash";
  app.add_option("--page-table", page_table, "hash or swizzle (both trees)")
      ->check(CLI::IsMember({"hash", "swizzle"}));
  app.add_flag("--stream-keys", o.stream_keys,
               "read the looked-up keys from one buffer in lookup order, not the scattered set");
  app.add_option("--dir", o.dir, "where the page files go (default /dev/shm)");
  app.add_option("--csv", o.csv, "one row per tree and repetition");
  CLI11_PARSE(app, argc, argv);
  o.page_table = pmcached::buffer::parse_page_table(page_table).value();
  o.thresholds.clear();
  for (const std::string& t : pmcached::bench::split_list(thresholds)) {
    o.thresholds.push_back(static_cast<unsigned>(std::stoul(t)));
  }
  try {
    return pmcached::bench::bench(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tree_bench: %s\n", e.what());
    return 2;
  }
}

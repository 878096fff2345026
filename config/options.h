// Options: everything pmcached is told at start-up, from flags and an optional config file.
//
// parse_options() accepts memcached's flags where they overlap (-p -l -t -c -m -M -I -U
// -v -vv -A -h -V, and the size classes' -n -f -o slab_chunk_max=N) and pmcached's own (--engine,
// --list-engines, --pool, --pm-flush,
// --pm-write-latency-ns, --config FILE, and the paged engines' --page-file, --page-size,
// --buffer-pool-mb, --page-table, --eviction, --page-file-mb, --log-mb, --b2-threshold). The config
// file uses the same long names as the flags ("port = 11311"); flags override the file. Thread
// safety: a plain value; parse once at start-up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pmcached::config {

struct Options {
  std::string listen_address = "127.0.0.1";      // -l / --listen
  std::uint16_t port = 11211;                    // -p / --port
  unsigned threads = 4;                          // -t / --threads (memcached's default)
  std::size_t max_connections = 1024;            // -c / --conn-limit
  std::size_t memory_limit_mb = 64;              // -m / --memory-limit
  bool no_evict = false;                         // -M / --disable-evictions
  std::size_t item_size_max = 1u << 20;          // -I / --max-item-size (k/m suffixes)
  int verbosity = 0;                             // -v (1), -vv (2)
  bool enable_shutdown = false;                  // -A / --enable-shutdown
  std::string engine = "wort";                   // --engine NAME (engine::kDefaultEngine)
  std::string pool_path = "data/pmcached.pool";  // --pool PATH
  std::string pm_flush = "auto";                 // --pm-flush clflush|clflushopt|clwb|auto
  std::uint32_t pm_write_latency_ns = 0;         // --pm-write-latency-ns N
  bool latency_stats = false;                    // --latency-stats (`stats latency`)
  bool list_engines = false;                     // --list-engines: print the engines, exit 0

  // Size classes (memcached's slab classes): the item heap's of a volatile store or a new pool;
  // an existing pool keeps the ones it was made with.
  std::uint32_t slab_min_size = 48;           // -n / --slab-min-size: key + value bytes
  double slab_growth_factor = 1.25;           // -f / --slab-growth-factor
  std::uint32_t slab_chunk_max = 512u << 10;  // -o slab_chunk_max=BYTES (--extended)

  // Paged engines (bptree): items on a page file behind a DRAM buffer pool, a redo log in the pool.
  std::string page_file;              // --page-file PATH; empty: the pool's path + ".pages"
  std::size_t page_size = 16 * 1024;  // --page-size BYTES: a power of two, 4096 .. 65536
  std::size_t buffer_pool_mb = 0;     // --buffer-pool-mb MB; 0: -m's value (the DRAM budget)
  std::string page_table = "hash";    // --page-table hash|swizzle
  std::string eviction = "clock";     // --eviction random|clock|gclock|car|lru
  std::size_t page_file_mb = 1024;    // --page-file-mb MB: the page file's maximum size
  std::size_t log_mb = 64;            // --log-mb MB: the redo log's region in the pool
  unsigned b2_threshold = 32;         // --b2-threshold N: b2tree's slots per range, 1 .. 1024
};

enum class ParseOutcome : std::uint8_t {
  kRun,    // start the server with `options`
  kExit,   // help or version was printed; exit with `exit_code` (0)
  kError,  // `message` is a one-line error; exit with `exit_code` (2)
};

struct ParseResult {
  ParseOutcome outcome = ParseOutcome::kRun;
  Options options;
  int exit_code = 0;
  std::string message;  // help/version text, or the one-line error
};

// Parses argv (and --config FILE if given). Never throws; never exits.
[[nodiscard]] ParseResult parse_options(int argc, const char* const* argv);

}  // namespace pmcached::config

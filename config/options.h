// Options: everything pmcached is told at start-up, from flags and an optional config file.
//
// parse_options() accepts memcached's flags where they overlap (-p -l -t -c -m -M -I -U
// -v -vv -A -h -V) and pmcached's own (--engine, --list-engines, --pool, --pm-flush,
// --pm-write-latency-ns, --config FILE). The config file
// uses the same long names as the flags ("port = 11311"); flags override the file.
// Thread safety: a plain value; parse once at start-up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pmcached::config {

struct Options {
  std::string listen_address = "127.0.0.1";      // -l / --listen
  std::uint16_t port = 11211;                    // -p / --port
  unsigned threads = 0;                          // -t / --threads; 0 = hardware threads
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

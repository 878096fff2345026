// parse_options(): CLI11 reads the flags (and --config FILE) into raw strings; this file then
// converts and range-checks every value itself, so that every failure is one short line in the
// form "pmcached: --port: 70000 is not in [0 - 65535]" and nothing ever throws out of here.
#include "config/options.h"

#include <algorithm>
#include <charconv>
#include <exception>
#include <string_view>
#include <system_error>

#include <CLI/CLI.hpp>

#ifndef PMCACHED_VERSION
#define PMCACHED_VERSION "unknown"
#endif

namespace pmcached::config {
namespace {

constexpr std::string_view kProgram = "pmcached";
constexpr std::uint64_t kMaxThreads = 1024;
constexpr std::uint64_t kMaxConnections = 1u << 20;
constexpr std::uint64_t kMaxMemoryMb = 1u << 24;  // 16 TiB
constexpr std::uint64_t kMinItemSize = 1024;      // memcached's lower limit for -I
constexpr std::uint64_t kMaxItemSize = 1u << 30;  // memcached's upper limit for -I (1 GiB)

// Thrown only inside this file and always caught by parse_options().
struct OptionError {
  std::string message;
};

[[noreturn]] void fail(std::string_view flag, const std::string& why) {
  throw OptionError{std::string(kProgram) + ": " + std::string(flag) + ": " + why};
}

// The raw text of every option that needs converting, as CLI11 found it.
// Emulated latencies beyond 1 ms per line are a typo, not an experiment.
constexpr std::uint64_t kMaxPmLatencyNs = 1'000'000;

struct RawOptions {
  std::string port, threads, conn_limit, memory_limit, item_size, udp_port, pm_latency;
  std::string page_size, buffer_pool_mb, page_file_mb, log_mb, b2_threshold;
  std::string slab_min_size, growth_factor;
  std::vector<std::string> extended;  // -o, each a comma-separated list
  int verbosity = 0;
};

// Quotes a value for an error message unless it is a plain run of digits.
std::string shown(std::string_view text) {
  bool digits = !text.empty();
  for (char c : text) digits = digits && c >= '0' && c <= '9';
  return digits ? std::string(text) : "'" + std::string(text) + "'";
}

std::uint64_t parse_number(std::string_view flag, std::string_view text) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != end) {
    fail(flag, shown(text) + " is not a number");
  }
  if (ec == std::errc::result_out_of_range) fail(flag, shown(text) + " is out of range");
  return value;
}

std::uint64_t parse_in_range(std::string_view flag, std::string_view text, std::uint64_t low,
                             std::uint64_t high) {
  const std::uint64_t value = parse_number(flag, text);
  if (value < low || value > high) {
    fail(flag,
         shown(text) + " is not in [" + std::to_string(low) + " - " + std::to_string(high) + "]");
  }
  return value;
}

// memcached's -I syntax: plain bytes, or a number with a k/K or m/M suffix.
std::uint64_t parse_item_size(std::string_view flag, std::string_view text) {
  std::uint64_t unit = 1;
  std::string_view digits = text;
  if (!text.empty()) {
    const char last = text.back();
    if (last == 'k' || last == 'K') unit = 1024;
    if (last == 'm' || last == 'M') unit = 1024 * 1024;
    if (unit != 1) digits.remove_suffix(1);
  }
  std::uint64_t count = 0;
  const char* end = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), end, count);
  if (digits.empty() || ec == std::errc::invalid_argument || ptr != end) {
    fail(flag, shown(text) + " is not a size (bytes, or a number with a k or m suffix)");
  }
  if (ec == std::errc::result_out_of_range || count > kMaxItemSize / unit ||
      count * unit < kMinItemSize) {
    fail(flag, shown(text) + " is not in [1k - 1024m]");
  }
  return count * unit;
}

// Joins a CLI11 message onto one line.
std::string one_line(std::string_view text) {
  std::string line;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    if (c == ' ' && (line.empty() || line.back() == ' ')) continue;
    line.push_back(c);
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

void add_options(CLI::App& app, Options& options, RawOptions& raw, bool& version) {
  // Like memcached (getopt), a repeated option keeps its last value.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_help_flag("-h,--help", "Print this help and exit");
  app.add_flag("-V,--version", version, "Print the version and exit");
  app.set_config("--config", "", "Read options from FILE: long option names, e.g. port = 11311")
      ->type_name("FILE");
  app.allow_config_extras(false);

  app.add_option("-p,--port", raw.port, "TCP port to listen on (0 = any free port); default 11211")
      ->type_name("PORT");
  app.add_option("-l,--listen", options.listen_address, "Interface to listen on; default 127.0.0.1")
      ->type_name("ADDR");
  app.add_option(
         "-t,--threads", raw.threads,
         "Worker threads; default 4, as memcached (not the host's CPU count, which a container "
         "does not own)")
      ->type_name("N");
  app.add_option("-c,--conn-limit", raw.conn_limit, "Max simultaneous connections; default 1024")
      ->type_name("N");
  app.add_option(
         "-m,--memory-limit", raw.memory_limit,
         "Item memory in megabytes; default 64. Persistent engines: the size of a new pool (an "
         "existing pool keeps its size)")
      ->type_name("MB");
  app.add_flag("-M,--disable-evictions", options.no_evict,
               "Return an error when memory is full instead of evicting");
  app.add_option("-I,--max-item-size", raw.item_size,
                 "Largest item, bytes or with a k/m suffix (1k - 1024m); default 1m")
      ->type_name("SIZE");
  app.add_option("-U,--udp-port", raw.udp_port, "UDP port; only 0 (off) is supported")
      ->type_name("PORT");
  app.add_option("-n,--slab-min-size", raw.slab_min_size,
                 "Size classes: key + value bytes of the smallest class; default 48")
      ->type_name("BYTES");
  app.add_option("-f,--slab-growth-factor", raw.growth_factor,
                 "Size classes: chunk size growth factor; default 1.25")
      ->type_name("FACTOR");
  app.add_option("-o,--extended", raw.extended,
                 "memcached's comma-separated extended options; only slab_chunk_max=BYTES "
                 "(the largest size class, default 524288)")
      ->type_name("OPTS")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_flag("-v,--verbose", raw.verbosity, "Verbose logging; -vv for more");
  app.add_flag("-A,--enable-shutdown", options.enable_shutdown, "Allow the \"shutdown\" command");
  app.add_option("--engine", options.engine, "Index engine; default wort")->type_name("NAME");
  app.add_flag("--list-engines", options.list_engines,
               "Print the index engines, one per line (name, persistent|volatile, description), "
               "and exit");
  app.add_option("--pool", options.pool_path, "Pool file; default data/pmcached.pool")
      ->type_name("PATH");
  app.add_option("--pm-flush", options.pm_flush,
                 "Cache-line flush instruction: clflush, clflushopt, clwb or auto (default)")
      ->type_name("INSN");
  app.add_flag("--latency-stats", options.latency_stats,
               "Record where requests spend their time in the server (stats latency)");
  app.add_option("--pm-write-latency-ns", raw.pm_latency,
                 "Emulated PM write latency: busy-wait N ns per flushed line; default 0")
      ->type_name("N");
  app.add_option("--page-file", options.page_file,
                 "Paged engines: the page file; default the pool's path + .pages")
      ->type_name("PATH");
  app.add_option("--page-size", raw.page_size,
                 "Paged engines: page size in bytes, a power of two from 4096 to 65536; "
                 "default 16384")
      ->type_name("BYTES");
  app.add_option("--buffer-pool-mb", raw.buffer_pool_mb,
                 "Paged engines: DRAM buffer pool in megabytes; default -m's value")
      ->type_name("MB");
  app.add_option("--page-table", options.page_table,
                 "Paged engines: page table, hash or swizzle; default hash")
      ->type_name("KIND");
  app.add_option("--eviction", options.eviction,
                 "Paged engines: replacement policy, random, clock, gclock, car or lru; "
                 "default clock")
      ->type_name("POLICY");
  app.add_option("--page-file-mb", raw.page_file_mb,
                 "Paged engines: largest page file in megabytes; default 1024")
      ->type_name("MB");
  app.add_option("--log-mb", raw.log_mb,
                 "Paged engines: redo log size in megabytes (in the pool); default 64")
      ->type_name("MB");
  app.add_option("--b2-threshold", raw.b2_threshold,
                 "b2tree: most slots per range of a page's embedded tree; default 32")
      ->type_name("N");
}

// The paged engines' flags.
void convert_paged(const CLI::App& app, const RawOptions& raw, Options& options) {
  auto given = [&app](const char* name) { return app.count(name) > 0; };
  if (given("--page-size")) {
    options.page_size = parse_in_range("--page-size", raw.page_size, 4096, 65536);
    if ((options.page_size & (options.page_size - 1)) != 0) {
      fail("--page-size", std::to_string(options.page_size) + " is not a power of two");
    }
  }
  if (given("--buffer-pool-mb")) {
    options.buffer_pool_mb =
        parse_in_range("--buffer-pool-mb", raw.buffer_pool_mb, 1, kMaxMemoryMb);
  }
  if (given("--page-file-mb")) {
    options.page_file_mb = parse_in_range("--page-file-mb", raw.page_file_mb, 1, kMaxMemoryMb);
  }
  if (given("--log-mb")) options.log_mb = parse_in_range("--log-mb", raw.log_mb, 1, 1u << 16);
  if (given("--b2-threshold")) {
    options.b2_threshold =
        static_cast<unsigned>(parse_in_range("--b2-threshold", raw.b2_threshold, 1, 1024));
  }
  if (options.page_table != "hash" && options.page_table != "swizzle") {
    fail("--page-table", shown(options.page_table) + " is not one of hash, swizzle");
  }
  const std::string& e = options.eviction;
  if (e != "random" && e != "clock" && e != "gclock" && e != "car" && e != "lru") {
    fail("--eviction", shown(e) + " is not one of random, clock, gclock, car, lru");
  }
  if (given("--page-file") && options.page_file.empty()) fail("--page-file", "the path is empty");
}

// The size-class flags, with memcached's words for what it refuses.
void convert_slabs(const CLI::App& app, const RawOptions& raw, Options& options) {
  auto given = [&app](const char* name) { return app.count(name) > 0; };
  if (given("--slab-min-size")) {
    const std::uint64_t n = parse_number("--slab-min-size", raw.slab_min_size);
    if (n == 0) fail("--slab-min-size", "Chunk size must be greater than 0");
    if (n > (1u << 20)) fail("--slab-min-size", shown(raw.slab_min_size) + " is out of range");
    options.slab_min_size = static_cast<std::uint32_t>(n);
  }
  if (given("--slab-growth-factor")) {
    const std::string& text = raw.growth_factor;
    double factor = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), factor);
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
      fail("--slab-growth-factor", shown(text) + " is not a number");
    }
    if (!(factor > 1.0)) fail("--slab-growth-factor", "Factor must be greater than 1");
    if (factor > 1000) fail("--slab-growth-factor", shown(text) + " is out of range");
    options.slab_growth_factor = factor;
  }
  bool chunk_max_given = false;
  for (const std::string& list : raw.extended) {
    std::string_view rest = list;
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      const std::string_view item = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      if (!item.starts_with("slab_chunk_max=")) {
        fail("-o", "Illegal suboption \"" + std::string(item) + "\"");
      }
      const std::string_view value = item.substr(std::string_view("slab_chunk_max=").size());
      std::uint64_t bytes = 0;
      const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), bytes);
      if (value.empty() || ec != std::errc() || ptr != value.data() + value.size()) {
        fail("-o", "could not parse argument to slab_chunk_max");
      }
      options.slab_chunk_max = static_cast<std::uint32_t>(std::min<std::uint64_t>(bytes, 1u << 30));
      chunk_max_given = true;
    }
  }
  const std::uint64_t chunk_max = options.slab_chunk_max;
  if (chunk_max_given) {
    if (chunk_max > options.item_size_max) {
      fail("-o", "slab_chunk_max (bytes: " + std::to_string(chunk_max) +
                     ") cannot be larger than -I (item_size_max " +
                     std::to_string(options.item_size_max) + ")");
    }
    if (chunk_max == 0 || options.item_size_max % chunk_max != 0) {
      fail("-o", "-I (item_size_max: " + std::to_string(options.item_size_max) +
                     ") must be evenly divisible by slab_chunk_max (bytes: " +
                     std::to_string(chunk_max) + ")");
    }
    if ((1u << 20) % chunk_max != 0) {
      fail("-o", "slab_chunk_max (bytes: " + std::to_string(chunk_max) +
                     ") must evenly divide the 1 MiB slab page");
    }
  }
  if (48 + std::uint64_t{options.slab_min_size} > chunk_max) {
    fail("--slab-min-size", std::to_string(options.slab_min_size) +
                                " makes the smallest size class larger than slab_chunk_max (" +
                                std::to_string(chunk_max) + ")");
  }
}

// Converts and checks the raw strings; throws OptionError on the first bad value.
void convert(const CLI::App& app, const RawOptions& raw, Options& options) {
  auto given = [&app](const char* name) { return app.count(name) > 0; };
  if (given("--port")) {
    options.port = static_cast<std::uint16_t>(parse_in_range("--port", raw.port, 0, 65535));
  }
  if (given("--threads")) {
    options.threads =
        static_cast<unsigned>(parse_in_range("--threads", raw.threads, 1, kMaxThreads));
  }
  if (given("--conn-limit")) {
    options.max_connections = parse_in_range("--conn-limit", raw.conn_limit, 1, kMaxConnections);
  }
  if (given("--memory-limit")) {
    options.memory_limit_mb = parse_in_range("--memory-limit", raw.memory_limit, 1, kMaxMemoryMb);
  }
  if (given("--max-item-size")) {
    options.item_size_max = parse_item_size("--max-item-size", raw.item_size);
  }
  if (given("--udp-port") && parse_number("--udp-port", raw.udp_port) != 0) {
    fail("--udp-port", "UDP is not supported");
  }
  if (raw.verbosity < 0) fail("--verbose", std::to_string(raw.verbosity) + " is negative");
  options.verbosity = raw.verbosity;
  // memcached's rule: an item may use at most half of the memory limit.
  if (options.item_size_max > options.memory_limit_mb * 1024 * 1024 / 2) {
    fail("--max-item-size", std::to_string(options.item_size_max) +
                                " bytes is more than half of --memory-limit (" +
                                std::to_string(options.memory_limit_mb) + " MB)");
  }
  if (options.listen_address.empty()) fail("--listen", "the address is empty");
  if (options.engine.empty()) fail("--engine", "the name is empty");
  if (options.pool_path.empty()) fail("--pool", "the path is empty");
  if (options.pm_flush != "auto" && options.pm_flush != "clflush" &&
      options.pm_flush != "clflushopt" && options.pm_flush != "clwb") {
    fail("--pm-flush", shown(options.pm_flush) + " is not one of clflush, clflushopt, clwb, auto");
  }
  if (given("--pm-write-latency-ns")) {
    options.pm_write_latency_ns = static_cast<std::uint32_t>(
        parse_in_range("--pm-write-latency-ns", raw.pm_latency, 0, kMaxPmLatencyNs));
  }
  convert_paged(app, raw, options);
  convert_slabs(app, raw, options);
}

ParseResult error(std::string message) {
  ParseResult result;
  result.outcome = ParseOutcome::kError;
  result.exit_code = 2;
  result.message = std::move(message);
  return result;
}

}  // namespace

ParseResult parse_options(int argc, const char* const* argv) {
  try {
    ParseResult result;
    RawOptions raw;
    bool version = false;
    CLI::App app("pmcached: a memcached-compatible key-value server on persistent memory",
                 std::string(kProgram));
    add_options(app, result.options, raw, version);
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
      result.outcome = ParseOutcome::kExit;
      result.message = app.help();
      while (!result.message.empty() && result.message.back() == '\n') result.message.pop_back();
      return result;
    } catch (const CLI::FileError& e) {
      return error(std::string(kProgram) + ": --config: " + one_line(e.what()));
    } catch (const CLI::ConfigError& e) {
      return error(std::string(kProgram) + ": --config: " + one_line(e.what()));
    } catch (const CLI::ParseError& e) {
      return error(std::string(kProgram) + ": " + one_line(e.what()));
    }
    if (version) {
      result.outcome = ParseOutcome::kExit;
      result.message = std::string(kProgram) + " " + PMCACHED_VERSION;
      return result;
    }
    convert(app, raw, result.options);
    return result;
  } catch (const OptionError& e) {
    return error(e.message);
  } catch (const std::exception& e) {
    return error(std::string(kProgram) + ": " + one_line(e.what()));
  } catch (...) {
    return error(std::string(kProgram) + ": unexpected error while reading the options");
  }
}

}  // namespace pmcached::config

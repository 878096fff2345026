// Tests for parse_options(): defaults, every flag, memcached's -I suffixes, the config file and
// its override by flags, help/version, and that every bad input gives one line and exit code 2.
#include "config/options.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace pmcached::config {
namespace {

ParseResult parse(std::initializer_list<const char*> args) {
  std::vector<const char*> argv{"pmcached"};
  argv.insert(argv.end(), args.begin(), args.end());
  return parse_options(static_cast<int>(argv.size()), argv.data());
}

Options parse_ok(std::initializer_list<const char*> args) {
  ParseResult result = parse(args);
  EXPECT_EQ(result.outcome, ParseOutcome::kRun) << result.message;
  EXPECT_EQ(result.exit_code, 0);
  return result.options;
}

// A config file in the temp directory, removed when the test ends.
class TempFile {
 public:
  explicit TempFile(const std::string& contents) {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("pmcached_options_test_" + std::to_string(::getpid()) + "_" +
             std::to_string(counter++) + ".conf");
    std::ofstream(path_) << contents;
  }
  ~TempFile() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

TEST(OptionsTest, DefaultsMatchTheHeader) {
  const Options parsed = parse_ok({});
  const Options defaults;
  EXPECT_EQ(parsed.listen_address, "127.0.0.1");
  EXPECT_EQ(parsed.port, 11211);
  EXPECT_EQ(parsed.threads, 4u);  // memcached's default, whatever the CPU count or quota
  EXPECT_EQ(parsed.max_connections, 1024u);
  EXPECT_EQ(parsed.memory_limit_mb, 64u);
  EXPECT_FALSE(parsed.no_evict);
  EXPECT_EQ(parsed.item_size_max, 1u << 20);
  EXPECT_EQ(parsed.verbosity, 0);
  EXPECT_FALSE(parsed.enable_shutdown);
  EXPECT_EQ(parsed.engine, "wort");
  EXPECT_EQ(parsed.pool_path, "data/pmcached.pool");
  EXPECT_EQ(parsed.port, defaults.port);
  EXPECT_EQ(parsed.pool_path, defaults.pool_path);
}

TEST(OptionsTest, ShortFlags) {
  const Options o = parse_ok({"-p", "11311", "-l", "0.0.0.0", "-t", "4", "-c", "50", "-m", "128",
                              "-M", "-I", "2m", "-U", "0", "-v", "-A"});
  EXPECT_EQ(o.port, 11311);
  EXPECT_EQ(o.listen_address, "0.0.0.0");
  EXPECT_EQ(o.threads, 4u);
  EXPECT_EQ(o.max_connections, 50u);
  EXPECT_EQ(o.memory_limit_mb, 128u);
  EXPECT_TRUE(o.no_evict);
  EXPECT_EQ(o.item_size_max, 2u << 20);
  EXPECT_EQ(o.verbosity, 1);
  EXPECT_TRUE(o.enable_shutdown);
}

TEST(OptionsTest, LongFlags) {
  // clang-format off
  const Options o = parse_ok({"--port", "11312", "--listen", "::1", "--threads", "3",
                              "--conn-limit", "77", "--memory-limit", "256", "--disable-evictions",
                              "--max-item-size", "4096", "--udp-port", "0", "--verbose",
                              "--enable-shutdown", "--engine", "wort", "--pool", "/tmp/x.pool"});
  // clang-format on
  EXPECT_EQ(o.port, 11312);
  EXPECT_EQ(o.listen_address, "::1");
  EXPECT_EQ(o.threads, 3u);
  EXPECT_EQ(o.max_connections, 77u);
  EXPECT_EQ(o.memory_limit_mb, 256u);
  EXPECT_TRUE(o.no_evict);
  EXPECT_EQ(o.item_size_max, 4096u);
  EXPECT_EQ(o.verbosity, 1);
  EXPECT_TRUE(o.enable_shutdown);
  EXPECT_EQ(o.engine, "wort");
  EXPECT_EQ(o.pool_path, "/tmp/x.pool");
}

TEST(OptionsTest, EqualsAndAttachedValues) {
  const Options o = parse_ok({"--port=11313", "-t2"});
  EXPECT_EQ(o.port, 11313);
  EXPECT_EQ(o.threads, 2u);
}

TEST(OptionsTest, RepeatedOptionKeepsTheLastValue) {
  EXPECT_EQ(parse_ok({"-p", "1", "-p", "2"}).port, 2);
}

TEST(OptionsTest, PortZeroMeansEphemeral) { EXPECT_EQ(parse_ok({"-p", "0"}).port, 0); }

TEST(OptionsTest, PortBounds) { EXPECT_EQ(parse_ok({"-p", "65535"}).port, 65535); }

TEST(OptionsTest, EngineIsStoredUnvalidated) {
  EXPECT_EQ(parse_ok({"--engine", "no-such-engine"}).engine, "no-such-engine");
}

TEST(OptionsTest, VerbosityCountsRepeats) {
  EXPECT_EQ(parse_ok({"-vv"}).verbosity, 2);
  EXPECT_EQ(parse_ok({"-v", "-v"}).verbosity, 2);
  EXPECT_EQ(parse_ok({"-vvv"}).verbosity, 3);
}

TEST(OptionsTest, ItemSizeSuffixes) {
  EXPECT_EQ(parse_ok({"-I", "512k"}).item_size_max, 512u * 1024);
  EXPECT_EQ(parse_ok({"-I", "512K"}).item_size_max, 512u * 1024);
  EXPECT_EQ(parse_ok({"-I", "1m"}).item_size_max, 1u << 20);
  EXPECT_EQ(parse_ok({"-I", "1M"}).item_size_max, 1u << 20);
  EXPECT_EQ(parse_ok({"-I", "1k"}).item_size_max, 1024u);
  EXPECT_EQ(parse_ok({"-I", "1024"}).item_size_max, 1024u);
  EXPECT_EQ(parse_ok({"-m", "2048", "-I", "1024m"}).item_size_max, 1u << 30);
}

TEST(OptionsTest, ConfigFileSetsOptions) {
  TempFile file(
      "# pmcached test config\nport = 11311\nengine = \"wort\"\nthreads = 6\n"
      "max-item-size = \"2m\"\ndisable-evictions = true\npool = \"/tmp/p.pool\"\n");
  const Options o = parse_ok({"--config", file.path().c_str()});
  EXPECT_EQ(o.port, 11311);
  EXPECT_EQ(o.engine, "wort");
  EXPECT_EQ(o.threads, 6u);
  EXPECT_EQ(o.item_size_max, 2u << 20);
  EXPECT_TRUE(o.no_evict);
  EXPECT_EQ(o.pool_path, "/tmp/p.pool");
  EXPECT_EQ(o.listen_address, "127.0.0.1");  // untouched by the file
}

TEST(OptionsTest, FlagsOverrideConfigFile) {
  TempFile file("port = 11311\nengine = \"wort\"\nthreads = 6\n");
  const Options o = parse_ok({"-p", "11400", "--config", file.path().c_str(), "--engine", "dram"});
  EXPECT_EQ(o.port, 11400);
  EXPECT_EQ(o.engine, "dram");
  EXPECT_EQ(o.threads, 6u);  // only in the file
}

TEST(OptionsTest, HelpExitsZeroWithUsage) {
  for (const char* flag : {"-h", "--help"}) {
    const ParseResult r = parse({flag});
    EXPECT_EQ(r.outcome, ParseOutcome::kExit);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.message.find("--port"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("--engine"), std::string::npos) << r.message;
    EXPECT_NE(r.message.back(), '\n');
  }
}

// --list-engines is for main() to act on (config knows no engines); bad flags still fail.
TEST(OptionsTest, ListEnginesIsAnOptionAndBadFlagsStillFail) {
  EXPECT_FALSE(parse_ok({}).list_engines);
  EXPECT_TRUE(parse_ok({"--list-engines"}).list_engines);
  const ParseResult r = parse({"--list-engines", "--port", "70000"});
  EXPECT_EQ(r.outcome, ParseOutcome::kError);
  EXPECT_EQ(r.exit_code, 2);
}

TEST(OptionsTest, VersionExitsZero) {
  for (const char* flag : {"-V", "--version"}) {
    const ParseResult r = parse({flag});
    EXPECT_EQ(r.outcome, ParseOutcome::kExit);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.message.rfind("pmcached ", 0), 0u) << r.message;
    EXPECT_EQ(r.message.find('\n'), std::string::npos) << r.message;
  }
}

// Every bad input: kError, exit code 2, one non-empty line starting with "pmcached: ".
void expect_error(std::initializer_list<const char*> args, const std::string& fragment) {
  const ParseResult r = parse(args);
  EXPECT_EQ(r.outcome, ParseOutcome::kError) << fragment;
  EXPECT_EQ(r.exit_code, 2) << fragment;
  EXPECT_EQ(r.message.rfind("pmcached: ", 0), 0u) << r.message;
  EXPECT_EQ(r.message.find('\n'), std::string::npos) << r.message;
  EXPECT_NE(r.message.find(fragment), std::string::npos) << r.message;
}

TEST(OptionsErrorTest, PortOutOfRange) {
  expect_error({"-p", "70000"}, "--port: 70000 is not in [0 - 65535]");
  expect_error({"-p", "-1"}, "");
  expect_error({"-p", "99999999999999999999999"}, "--port");
}

TEST(OptionsErrorTest, PortGarbage) {
  expect_error({"-p", "abc"}, "--port: 'abc' is not a number");
  expect_error({"-p", "80x"}, "--port");
  expect_error({"-p", ""}, "--port");
}

TEST(OptionsErrorTest, Threads) {
  expect_error({"-t", "0"}, "--threads: 0 is not in [1 - 1024]");
  expect_error({"-t", "garbage"}, "--threads: 'garbage' is not a number");
  expect_error({"-t", "100000"}, "--threads");
}

TEST(OptionsErrorTest, ConnLimitZero) { expect_error({"-c", "0"}, "--conn-limit: 0 is not in"); }

TEST(OptionsErrorTest, MemoryLimitZero) {
  expect_error({"-m", "0"}, "--memory-limit: 0 is not in");
}

TEST(OptionsErrorTest, ItemSize) {
  expect_error({"-I", "0"}, "--max-item-size: 0 is not in [1k - 1024m]");
  expect_error({"-I", "1023"}, "--max-item-size");
  expect_error({"-I", "garbage"}, "--max-item-size: 'garbage' is not a size");
  expect_error({"-I", "1g"}, "--max-item-size");
  expect_error({"-I", "k"}, "--max-item-size");
  expect_error({"-I", "-1m"}, "");
  expect_error({"-m", "4096", "-I", "1025m"}, "--max-item-size");
  expect_error({"-I", "99999999999999999m"}, "--max-item-size");
}

TEST(OptionsErrorTest, ItemSizeAboveHalfTheMemoryLimit) {
  expect_error({"-I", "64m"},
               "--max-item-size: 67108864 bytes is more than half of --memory-limit");
}

TEST(OptionsErrorTest, UdpIsNotSupported) {
  expect_error({"-U", "11211"}, "--udp-port: UDP is not supported");
  expect_error({"-U", "x"}, "--udp-port");
}

TEST(OptionsErrorTest, UnknownFlag) {
  expect_error({"--no-such-flag"}, "--no-such-flag");
  expect_error({"-Z"}, "-Z");
  expect_error({"stray"}, "stray");
}

TEST(OptionsErrorTest, MissingValue) { expect_error({"-p"}, "--port"); }

TEST(OptionsErrorTest, MissingConfigFile) {
  expect_error({"--config", "/nonexistent/pmcached.conf"}, "--config: /nonexistent/pmcached.conf");
}

TEST(OptionsErrorTest, BadValueInConfigFile) {
  TempFile file("port = 70000\n");
  expect_error({"--config", file.path().c_str()}, "--port: 70000 is not in [0 - 65535]");
}

TEST(OptionsErrorTest, UnknownKeyInConfigFile) {
  TempFile file("port = 11311\nno-such-option = 3\n");
  expect_error({"--config", file.path().c_str()}, "--config:");
  expect_error({"--config", file.path().c_str()}, "no-such-option");
}

TEST(OptionsErrorTest, EmptyStrings) {
  expect_error({"--engine", ""}, "--engine");
  expect_error({"--pool", ""}, "--pool");
  expect_error({"-l", ""}, "--listen");
}

}  // namespace
}  // namespace pmcached::config

namespace pmcached::config {
namespace {

TEST(OptionsTest, PagedEngineFlags) {
  const Options defaults = parse_ok({});
  EXPECT_EQ(defaults.page_size, 16384u);
  EXPECT_EQ(defaults.buffer_pool_mb, 0u);  // -m's value
  EXPECT_EQ(defaults.page_table, "hash");
  EXPECT_EQ(defaults.eviction, "clock");
  const Options o =
      parse_ok({"--page-file", "/tmp/x.pages", "--page-size", "4096", "--buffer-pool-mb", "8",
                "--page-table", "swizzle", "--eviction", "car", "--page-file-mb", "100", "--log-mb",
                "16", "--b2-threshold", "8"});
  EXPECT_EQ(o.page_file, "/tmp/x.pages");
  EXPECT_EQ(o.page_size, 4096u);
  EXPECT_EQ(o.buffer_pool_mb, 8u);
  EXPECT_EQ(o.page_table, "swizzle");
  EXPECT_EQ(o.eviction, "car");
  EXPECT_EQ(o.page_file_mb, 100u);
  EXPECT_EQ(o.log_mb, 16u);
  EXPECT_EQ(o.b2_threshold, 8u);
  EXPECT_EQ(defaults.b2_threshold, 32u);
}

TEST(OptionsTest, BadPagedEngineFlagsAreOneLineErrors) {
  expect_error({"--page-size", "5000"}, "--page-size: 5000 is not a power of two");
  expect_error({"--page-size", "2048"}, "--page-size: 2048 is not in [4096 - 65536]");
  expect_error({"--page-size", "131072"}, "--page-size");
  expect_error({"--eviction", "arc"}, "--eviction: 'arc' is not one of random, clock, gclock");
  expect_error({"--page-table", "tree"}, "--page-table: 'tree' is not one of hash, swizzle");
  expect_error({"--buffer-pool-mb", "0"}, "--buffer-pool-mb: 0 is not in");
  expect_error({"--page-file-mb", "x"}, "--page-file-mb: 'x' is not a number");
  expect_error({"--page-file", ""}, "--page-file: the path is empty");
  expect_error({"--b2-threshold", "0"}, "--b2-threshold: 0 is not in [1 - 1024]");
}

TEST(OptionsTest, SizeClassFlagsAreMemcacheds) {
  const Options defaults = parse_ok({});
  EXPECT_EQ(defaults.slab_min_size, 48u);
  EXPECT_EQ(defaults.slab_growth_factor, 1.25);
  EXPECT_EQ(defaults.slab_chunk_max, 524288u);
  const Options short_flags = parse_ok({"-n", "100", "-f", "2", "-o", "slab_chunk_max=65536"});
  EXPECT_EQ(short_flags.slab_min_size, 100u);
  EXPECT_EQ(short_flags.slab_growth_factor, 2.0);
  EXPECT_EQ(short_flags.slab_chunk_max, 65536u);
  const Options long_flags = parse_ok({"--slab-min-size", "5", "--slab-growth-factor", "1.07",
                                       "--extended", "slab_chunk_max=4096"});
  EXPECT_EQ(long_flags.slab_min_size, 5u);
  EXPECT_EQ(long_flags.slab_growth_factor, 1.07);
  EXPECT_EQ(long_flags.slab_chunk_max, 4096u);
  // -o may be repeated (memcached processes each); the last slab_chunk_max wins.
  EXPECT_EQ(parse_ok({"-o", "slab_chunk_max=8192", "-o", "slab_chunk_max=16384"}).slab_chunk_max,
            16384u);
  EXPECT_EQ(parse_ok({"-o", "slab_chunk_max=8192,slab_chunk_max=32768"}).slab_chunk_max, 32768u);
  TempFile file("slab-growth-factor = 1.5\nextended = slab_chunk_max=131072\n");
  const Options from_file = parse_ok({"--config", file.path().c_str()});
  EXPECT_EQ(from_file.slab_growth_factor, 1.5);
  EXPECT_EQ(from_file.slab_chunk_max, 131072u);
}

TEST(OptionsTest, BadSizeClassFlagsAreOneLineErrors) {
  expect_error({"-f", "1"}, "--slab-growth-factor: Factor must be greater than 1");
  expect_error({"-f", "0.5"}, "--slab-growth-factor: Factor must be greater than 1");
  expect_error({"-f", "x"}, "--slab-growth-factor: 'x' is not a number");
  expect_error({"-n", "0"}, "--slab-min-size: Chunk size must be greater than 0");
  expect_error({"-o", "foo=1"}, "-o: Illegal suboption \"foo=1\"");
  expect_error({"-o", "slab_chunk_max=65536,foo"}, "-o: Illegal suboption \"foo\"");
  expect_error({"-o", "slab_chunk_max=64k"}, "-o: could not parse argument to slab_chunk_max");
  expect_error({"-o", "slab_chunk_max=1000"},
               "-o: -I (item_size_max: 1048576) must be evenly divisible by slab_chunk_max");
  expect_error({"-o", "slab_chunk_max=2097152"},
               "-o: slab_chunk_max (bytes: 2097152) cannot be larger than -I");
  expect_error({"-I", "4m", "-o", "slab_chunk_max=2097152"},
               "-o: slab_chunk_max (bytes: 2097152) must evenly divide the 1 MiB slab page");
  expect_error({"-n", "600000"}, "--slab-min-size: 600000 makes the smallest size class larger");
}

}  // namespace
}  // namespace pmcached::config

// pmcached: start-up. Parses options, builds the store on the chosen engine, serves
// (or, with --list-engines, prints the registered engines and exits).
// Exit codes: 0 after a clean shutdown, 2 for bad flags or configuration, 71 when the open-file
// limit cannot hold -c connections (memcached's EX_OSERR), 1 otherwise.
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "config/options.h"
#include "engine/open_store.h"
#include "engine/store/clock.h"
#include "server/descriptor_limit.h"
#include "server/server.h"
#include "server/storage.h"

namespace {

using namespace pmcached;

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
constexpr int kExitOsError = 71;  // EX_OSERR, what memcached exits with

void set_up_logging(int verbosity) {
  auto logger = spdlog::stderr_color_mt("pmcached");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %v");
  spdlog::set_level(verbosity >= 2   ? spdlog::level::trace
                    : verbosity == 1 ? spdlog::level::debug
                                     : spdlog::level::info);
}

int serve(config::Options options) {
  set_up_logging(options.verbosity);

  const server::DescriptorBudget descriptors =
      server::fit_descriptor_limit(options.max_connections, options.threads);
  if (!descriptors.fits) {
    std::fprintf(stderr, "pmcached: %s\n", descriptors.message.c_str());
    return kExitOsError;
  }
  if (!descriptors.message.empty()) spdlog::warn("{}", descriptors.message);

  engine::SystemClock clock;
  std::unique_ptr<engine::OpenStore> storage;
  try {
    storage = server::open_storage(options, clock);
  } catch (const server::StorageError& error) {
    std::fprintf(stderr, "pmcached: %s\n", error.what());
    return kExitUsage;
  }

  std::unique_ptr<server::Server> server;
  try {
    server = std::make_unique<server::Server>(options, *storage, descriptors.connection_slots);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "pmcached: cannot listen on %s:%u: %s\n", options.listen_address.c_str(),
                 static_cast<unsigned>(options.port), error.what());
    return kExitFailure;
  }
  const bool persistent = storage->engine_info().persistent;
  // A reopened pool keeps its own size, whatever -m says (storage.cc warns).
  const std::optional<engine::PmStats> pm = storage->pm_stats();
  const std::size_t memory_mb = pm && !storage->engine_info().create_records
                                    ? static_cast<std::size_t>(pm->pool_bytes >> 20)
                                    : options.memory_limit_mb;
  spdlog::info(
      "pmcached {} listening on {}:{} (engine {}{}, {} threads, {} MB, max {} connections)",
      PMCACHED_VERSION, options.listen_address, server->port(), options.engine,
      persistent ? ", pool " + options.pool_path : std::string(", volatile"), options.threads,
      memory_mb, options.max_connections);
  server->run();
  server.reset();
  storage->close();
  if (persistent) spdlog::info("pool synced and marked clean");
  spdlog::info("pmcached stopped cleanly");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const config::ParseResult parsed = config::parse_options(argc, argv);
  switch (parsed.outcome) {
    case config::ParseOutcome::kExit:
      std::fputs(parsed.message.c_str(), stdout);
      if (!parsed.message.empty() && parsed.message.back() != '\n') std::fputc('\n', stdout);
      return parsed.exit_code;
    case config::ParseOutcome::kError:
      std::fprintf(stderr, "%s\n", parsed.message.c_str());
      return parsed.exit_code;
    case config::ParseOutcome::kRun: break;
  }
  if (parsed.options.list_engines) {
    std::fputs(engine::engine_list().c_str(), stdout);
    return 0;
  }
  try {
    return serve(parsed.options);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "pmcached: %s\n", error.what());
    return kExitFailure;
  }
}

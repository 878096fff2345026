// pmcached: start-up. Parses options, builds the store on the chosen engine, serves.
// Exit codes: 0 after a clean shutdown, 2 for bad flags or configuration, 1 otherwise.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <thread>

#include "config/options.h"
#include "engine/clock.h"
#include "engine/engine_registry.h"
#include "engine/store.h"
#include "server/server.h"

namespace {

using namespace pmcached;

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

void set_up_logging(int verbosity) {
  auto logger = spdlog::stderr_color_mt("pmcached");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %v");
  spdlog::set_level(verbosity >= 2   ? spdlog::level::trace
                    : verbosity == 1 ? spdlog::level::debug
                                     : spdlog::level::info);
}

int serve(config::Options options) {
  const engine::EngineInfo* info = engine::find_engine(options.engine);
  if (info == nullptr) {
    std::fprintf(stderr, "pmcached: unknown engine '%s' (valid: %s)\n", options.engine.c_str(),
                 engine::engine_names().c_str());
    return kExitUsage;
  }
  if (options.threads == 0) options.threads = std::max(1u, std::thread::hardware_concurrency());
  set_up_logging(options.verbosity);

  engine::SystemClock clock;
  engine::StoreOptions store_options;
  store_options.memory_limit_bytes = options.memory_limit_mb << 20;
  store_options.item_size_max = options.item_size_max;
  store_options.evict_when_full = !options.no_evict;
  engine::Store store(info->create(engine::EngineContext{engine::Store::key_of}), clock,
                     store_options);

  std::unique_ptr<server::Server> server;
  try {
    server = std::make_unique<server::Server>(options, store);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "pmcached: cannot listen on %s:%u: %s\n", options.listen_address.c_str(),
                 static_cast<unsigned>(options.port), error.what());
    return kExitFailure;
  }
  spdlog::info("pmcached {} listening on {}:{} (engine {}{}, {} threads, {} MB, max {} connections)",
               PMCACHED_VERSION, options.listen_address, server->port(), options.engine,
               info->persistent ? "" : ", volatile", options.threads, options.memory_limit_mb,
               options.max_connections);
  server->run();
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
    case config::ParseOutcome::kRun:
      break;
  }
  try {
    return serve(parsed.options);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "pmcached: %s\n", error.what());
    return kExitFailure;
  }
}

// Registry of index engines by name; `--engine NAME` picks one at start-up.
//
// All engines are registered explicitly in one place (engine_registry.cc), so the list
// of engines is easy to find and an unknown name can list the valid ones.
// Thread safety: read-only after static initialisation; safe to call from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/engine_context.h"
#include "engine/record_engine.h"

namespace pmcached::engine {

struct EngineInfo {
  std::string name;
  std::string description;
  bool persistent;
  EngineFactory create;  // an index engine (the store keeps the records)...
  // ...or an engine that owns its records (a paged engine): exactly one of the two is set.
  RecordEngineFactory create_records = nullptr;
};

// Every registered engine, in a stable order.
[[nodiscard]] const std::vector<EngineInfo>& registered_engines();

// The engine called `name`, or nullptr.
[[nodiscard]] const EngineInfo* find_engine(std::string_view name);

// "dram, wort, ..." for error messages.
[[nodiscard]] std::string engine_names();

// What `pmcached --list-engines` prints: one line per engine, in registry order,
// "NAME persistent|volatile DESCRIPTION\n". Scripts and the integration tests read it.
[[nodiscard]] std::string engine_list();

// The engine used when --engine is not given.
inline constexpr std::string_view kDefaultEngine = "wort";

}  // namespace pmcached::engine

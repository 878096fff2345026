// The one place where index engines are registered. To add an engine: implement IndexEngine,
// add a row here, and the engine test suite (tests/engine) runs over it automatically.
#include "engine/engine_registry.h"

#include "engine/dram_engine.h"
#include "engine/wort/wort_engine.h"

namespace pmcached::engine {

const std::vector<EngineInfo>& registered_engines() {
  static const std::vector<EngineInfo> engines = {
      {std::string(kDramEngineName), "volatile in-memory B-tree (abseil btree_set); not durable",
       /*persistent=*/false, [](const EngineContext& context) { return make_dram_engine(context); }},
      {std::string(kWortEngineName),
       "WORT: write-optimal radix tree, 4-bit nodes, 8-byte atomic commits (seed 002 §3.4)",
       /*persistent=*/true, [](const EngineContext& context) { return make_wort_engine(context); }},
  };
  return engines;
}

const EngineInfo* find_engine(std::string_view name) {
  for (const EngineInfo& info : registered_engines()) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

std::string engine_names() {
  std::string names;
  for (const EngineInfo& info : registered_engines()) {
    if (!names.empty()) names += ", ";
    names += info.name;
  }
  return names;
}

}  // namespace pmcached::engine

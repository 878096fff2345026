// Registry of index engines by name; `--engine NAME` picks one at start-up.
//
// All engines are registered explicitly in one place (engine_registry.cc), so the list
// of engines is easy to find and an unknown name can list the valid ones.
// Thread safety: read-only after static initialisation; safe to call from any thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/index_engine.h"

namespace pmcached::pm {
class Pool;
class Allocator;
}  // namespace pmcached::pm

namespace pmcached::engine {

// What an engine gets when it is created. Persistent engines will receive their pool
// and a way to read the key of an item reference here.
struct EngineContext {
  // Returns the key bytes of an item reference (engines that keep keys out of line,
  // such as the radix trees, compare keys through this).
  std::function<std::string_view(ItemRef)> key_of;

  // Persistent engines only: the pool (its root field holds the engine's root) and the
  // allocator for index nodes. Both outlive the engine.
  pm::Pool* pool = nullptr;
  pm::Allocator* allocator = nullptr;
};

using EngineFactory = std::function<std::unique_ptr<IndexEngine>(const EngineContext&)>;

struct EngineInfo {
  std::string name;
  std::string description;
  bool persistent;
  EngineFactory create;
};

// Every registered engine, in a stable order.
[[nodiscard]] const std::vector<EngineInfo>& registered_engines();

// The engine called `name`, or nullptr.
[[nodiscard]] const EngineInfo* find_engine(std::string_view name);

// "dram, wort, ..." for error messages.
[[nodiscard]] std::string engine_names();

// The engine used when --engine is not given.
inline constexpr std::string_view kDefaultEngine = "wort";

}  // namespace pmcached::engine

// EngineContext: what an index engine is given when it is created, and the factory signature
// every engine registers under its name (engine_registry.h).
//
// Thread safety: a plain value; the pool and allocator it names have their own rules.
#pragma once

#include <functional>
#include <memory>
#include <string_view>

#include "engine/index_engine.h"

namespace pmcached::pm {
class Pool;
class Allocator;
}  // namespace pmcached::pm

namespace pmcached::engine {

struct EngineContext {
  // Returns the key bytes of an item reference (engines that keep keys out of line, such as
  // the radix trees, compare keys through this). The store fills it from its item heap.
  std::function<std::string_view(ItemRef)> key_of;

  // Persistent engines only: the pool (its root field holds the engine's root) and the
  // allocator for index nodes. Both outlive the engine. Without them a persistent engine
  // works in a private in-memory pool (pool_binding.h).
  pm::Pool* pool = nullptr;
  pm::Allocator* allocator = nullptr;

  // The dram engine: keep a hash index beside the ordered one, for lookups and for sets of keys
  // that exist, as memcached's hash table serves them. bench/index_bench turns it off, so that
  // `dram` there is the ordered index alone (seed 002's B+-tree baseline).
  bool hash_index = true;
};

using EngineFactory = std::function<std::unique_ptr<IndexEngine>(const EngineContext&)>;

}  // namespace pmcached::engine

// The one place where index engines are registered. To add an engine: implement IndexEngine,
// add a row here, and the engine suites (all, ordered, concurrent, persistent, crash:
// tests/engine/engine_suites.h) and the integration tests run over it automatically.
//
// CMake reads this table at configure time (cmake/registered_engines.cmake) to register the
// integration tests per engine: keep each row's shape, `{std::string(kXxxEngineName), ...
// /*persistent=*/true|false, factory}`, with the name constant defined in an
// engine/*/*_factory.h. A pytest (tests/integration/test_engine_list.py) fails if what CMake read
// differs from `pmcached --list-engines`.
#include "engine/engine_registry.h"

#include "engine/art/art_factory.h"
#include "engine/b2tree/b2tree_factory.h"
#include "engine/bptree/bptree_factory.h"
#include "engine/dram/dram_factory.h"
#include "engine/fptree/fptree_factory.h"
#include "engine/nvtree/nvtree_factory.h"
#include "engine/wbtree/wbtree_factory.h"
#include "engine/wort/wort_factory.h"

namespace pmcached::engine {

const std::vector<EngineInfo>& registered_engines() {
  static const std::vector<EngineInfo> engines = {
      {std::string(kDramEngineName), "volatile in-memory B-tree (abseil btree_set); not durable",
       /*persistent=*/false,
       [](const EngineContext& context) { return make_dram_engine(context); }},
      {std::string(kWortEngineName),
       "WORT: write-optimal radix tree, 4-bit nodes, 8-byte atomic commits (seed 002 §3.4)",
       /*persistent=*/true, [](const EngineContext& context) { return make_wort_engine(context); }},
      {std::string(kWoartEngineName),
       "WOART: write-optimal adaptive radix tree, N4/N16/N48/N256 with in-place atomic commits "
       "(seed 002 §3.5)",
       /*persistent=*/true,
       [](const EngineContext& context) { return make_woart_engine(context); }},
      {std::string(kArtCowEngineName),
       "ART+CoW: adaptive radix tree, copy-on-write N4/N16 and prefix splits (seed 002 §3.6)",
       /*persistent=*/true,
       [](const EngineContext& context) { return make_artcow_engine(context); }},
      {std::string(kFpTreeEngineName),
       "FPTree: PM leaves with a bitmap and 1-byte fingerprints, DRAM inner nodes rebuilt at "
       "start-up, micro-logged splits (seed 002 §2.2)",
       /*persistent=*/true,
       [](const EngineContext& context) { return make_fptree_engine(context); }},
      {std::string(kWbTreeEngineName),
       "wB+-Tree: all nodes in PM, unsorted entries ordered by a slot array, 8-byte bitmap "
       "commits, redo-logged splits (seed 002 §2.2)",
       /*persistent=*/true,
       [](const EngineContext& context) { return make_wbtree_engine(context); }},
      {std::string(kNvTreeEngineName),
       "NV-Tree: append-only PM leaves with an entry counter, DRAM inner nodes in one array "
       "rebuilt from the leaves (seed 002 §2.2)",
       /*persistent=*/true,
       [](const EngineContext& context) { return make_nvtree_engine(context); }},
      {std::string(kBpTreeEngineName),
       "B+-tree of slotted pages on a page file behind a DRAM buffer pool (hash table or "
       "swizzling, five replacement policies), durable through a redo log in the pool; items "
       "may be many times the memory (seed 004 §4.1, 001, 003)",
       /*persistent=*/true, nullptr,
       [](const RecordEngineContext& context) { return make_bptree_engine(context); }},
      {std::string(kB2TreeEngineName),
       "B2-tree: the bptree engine with a small trie embedded in every page that narrows the "
       "in-page search to a range of slots holding the key bytes after their shared prefix "
       "(seed 004)",
       /*persistent=*/true, nullptr,
       [](const RecordEngineContext& context) { return make_b2tree_engine(context); }},
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

std::string engine_list() {
  std::string list;
  for (const EngineInfo& info : registered_engines()) {
    list += info.name;
    list += info.persistent ? " persistent " : " volatile ";
    list += info.description;
    list += '\n';
  }
  return list;
}

}  // namespace pmcached::engine

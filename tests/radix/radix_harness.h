// Test harness for the radix engines (wort, woart, artcow): an in-memory pool (optionally watched
// by a CrashSimulator), its allocator, test "items" ({u8 len; key bytes} blocks from the same
// allocator, persisted), the engine created through the registry by name, restart from a crash
// image with the allocator rebuild, and the full invariants check (radix_inspect.h plus the
// engine's own view of the tree and the allocator's accounting).
//
// Thread safety: single-threaded, except that engine() may be shared by threads that only use
// the engine (and make_item() is not called concurrently).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/index_engine.h"
#include "engine/pm/allocator.h"
#include "engine/pm/crash_simulator.h"
#include "engine/pm/pm_region.h"
#include "engine/pm/pool.h"
#include "tests/radix/radix_inspect.h"

namespace pmcached::engine::radix::testing {

using Model = std::map<std::string, ItemRef>;

// The radix engines, those of them that are registered (so the suites run before all exist).
[[nodiscard]] std::vector<std::string> registered_radix_engines();
// Of `names`, those that are registered.
[[nodiscard]] std::vector<std::string> registered_of(const std::vector<std::string>& names);

class Harness {
 public:
  // A new, empty pool of `bytes` for `engine`.
  Harness(std::string engine, std::size_t bytes, pm::CrashSimulator* simulator = nullptr);
  // A restart from `image`: open the pool for `engine`, begin the allocator rebuild, create the
  // engine, recover(), mark every node block (for_each_block) and the item of every key (scan),
  // finish the rebuild. Anything odd on the way is in restart_problems().
  Harness(std::string engine, const std::vector<char>& image);

  [[nodiscard]] const std::string& engine_name() const { return name_; }
  [[nodiscard]] IndexEngine& engine() { return *engine_; }
  [[nodiscard]] pm::Pool& pool() { return *pool_; }
  [[nodiscard]] pm::Allocator& allocator() { return *allocator_; }
  [[nodiscard]] pm::PmRegion& region() { return pool_->region(); }
  [[nodiscard]] const NodeDecoder& decoder() const { return decode_; }
  [[nodiscard]] const std::string& restart_problems() const { return restart_problems_; }

  // A persisted item holding `key`; 0 when the heap is full.
  [[nodiscard]] ItemRef make_item(std::string_view key);
  void free_item(ItemRef ref) { allocator_->free(ref); }

  // Upsert/erase as the store would: a new item per upsert, the replaced or erased item freed.
  // `model` is updated to match. Returns the upsert status / whether a key was erased.
  UpsertStatus put(std::string_view key, Model& model);
  bool del(std::string_view key, Model& model);

  // Every key and reference the engine holds, by scan.
  [[nodiscard]] Model contents();

  // The tree as the invariants checker reads it.
  [[nodiscard]] TreeReport inspect();
  // The node on `key`'s path branching at chunk `branch` (radix_inspect.h), 0 if none.
  [[nodiscard]] std::uint64_t node_at(std::string_view key, std::uint32_t branch);
  // Its type ("n4", ..., "wort"), or "none".
  [[nodiscard]] std::string type_at(std::string_view key, std::uint32_t branch);

  // Full check: inspect_tree, the engine agrees with it (size, lookup of every leaf, scan
  // order, for_each_block = the node set, each once), each node's block has its layout's size
  // class, and, with `accounting`, the allocator's bytes_in_use equals the blocks of the nodes
  // plus the items in the tree. "" when all hold.
  [[nodiscard]] std::string check(bool accounting = true);

 private:
  void create_engine();

  std::string name_;
  NodeDecoder decode_;
  std::unique_ptr<pm::Pool> pool_;
  std::unique_ptr<pm::Allocator> allocator_;
  std::unique_ptr<IndexEngine> engine_;
  std::string restart_problems_;
};

// prefix + decimal n (std::string operator+ trips a g++ 12 -Wrestrict false positive at -O3).
[[nodiscard]] std::string numbered(std::string_view prefix, std::uint64_t n);

// 8-byte big-endian encoding of `v` (integer order = key order).
[[nodiscard]] std::string be64(std::uint64_t v);

}  // namespace pmcached::engine::radix::testing

// Test harness for the wort engine: an in-memory pool (optionally watched by a CrashSimulator),
// its allocator, test "items" ({u8 len; key bytes} blocks from the same allocator, persisted),
// the engine created through the registry, restart from a crash image with the allocator
// rebuild, and an invariants checker that reads the node layout (wort_node.h) directly.
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
#include <utility>
#include <vector>

#include "engine/index_engine.h"
#include "engine/pm/allocator.h"
#include "engine/pm/crash_simulator.h"
#include "engine/pm/pm_region.h"
#include "engine/pm/pool.h"

namespace pmcached::engine::wort::testing {

using Model = std::map<std::string, ItemRef>;

// What the invariants checker found in a tree.
struct TreeReport {
  std::vector<std::string> problems;                    // empty: all invariants hold
  std::vector<std::uint64_t> nodes;                     // every node, in walk order
  std::vector<std::pair<std::string, ItemRef>> leaves;  // every leaf, in walk order
};

// Checks, without the engine: each node's depth equals the depth its path implies and its
// prefix (stored nibbles and the optimistic rest) is the common prefix of its leaves' keys; each
// leaf sits at its key's path (END slot: the key ends at the branch; child i: nibble i); the
// root has depth 0 and no prefix; every non-root node has >= 2 references; no node is reached
// twice; the walk visits keys in strictly increasing order.
[[nodiscard]] TreeReport inspect_tree(const pm::PmRegion& region, std::uint64_t root);

// The key of a test item (a view into the region; "" for an out-of-range reference).
[[nodiscard]] std::string_view item_key(const pm::PmRegion& region, ItemRef ref);

class Harness {
 public:
  // A new, empty pool of `bytes`.
  explicit Harness(std::size_t bytes, pm::CrashSimulator* simulator = nullptr);
  // A restart from `image`: open the pool, begin the allocator rebuild, create the engine,
  // recover(), mark every node block (for_each_block) and the item of every key (scan), finish
  // the rebuild. Anything odd on the way is in restart_problems().
  explicit Harness(const std::vector<char>& image);

  [[nodiscard]] IndexEngine& engine() { return *engine_; }
  [[nodiscard]] pm::Pool& pool() { return *pool_; }
  [[nodiscard]] pm::Allocator& allocator() { return *allocator_; }
  [[nodiscard]] pm::PmRegion& region() { return pool_->region(); }
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

  // Full check: inspect_tree, the engine agrees with it (size, lookup of every leaf, scan
  // order, for_each_block = the node set, each once), and, with `accounting`, the allocator's
  // bytes_in_use equals the blocks of the nodes plus the items in the tree. "" when all hold.
  [[nodiscard]] std::string check(bool accounting = true);

 private:
  void create_engine();

  std::unique_ptr<pm::Pool> pool_;
  std::unique_ptr<pm::Allocator> allocator_;
  std::unique_ptr<IndexEngine> engine_;
  std::string restart_problems_;
};

// prefix + decimal n (std::string operator+ trips a g++ 12 -Wrestrict false positive at -O3).
[[nodiscard]] std::string numbered(std::string_view prefix, std::uint64_t n);

// "\0\0..\x12" style: 8-byte big-endian encoding of `v` (integer order = key order).
[[nodiscard]] std::string be64(std::uint64_t v);

}  // namespace pmcached::engine::wort::testing

// Test harness for the persistent index engines (every registered engine with persistent ==
// true: the radix trees wort, woart, artcow and the B-trees once registered): an in-memory pool
// (optionally watched by a CrashSimulator), its allocator, test "items" ({u8 len; key bytes}
// blocks from the same allocator, persisted), the engine created through the registry by name,
// restart from a crash image with the allocator rebuild, and the full invariants check (the
// engine's inspector, tree_report.h, plus the engine's own view of the tree and the allocator's
// accounting).
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
#include "tests/index/tree_report.h"

namespace pmcached::engine::testing {

using Model = std::map<std::string, ItemRef>;

// Of `names`, those that are registered.
[[nodiscard]] std::vector<std::string> registered_of(const std::vector<std::string>& names);

class Harness {
 public:
  // A new, empty pool of `bytes` for `engine`.
  Harness(std::string engine, std::size_t bytes, pm::CrashSimulator* simulator = nullptr);
  // A restart from `image`: open the pool for `engine`, begin the allocator rebuild, create the
  // engine, recover(), mark every node block (for_each_block) and the item of every key (scan),
  // finish the rebuild. Anything odd on the way is in restart_problems(). With `simulator`, the
  // restart itself (recovery included) runs watched by it, so a test can crash a recovery.
  Harness(std::string engine, const std::vector<char>& image,
          pm::CrashSimulator* simulator = nullptr);

  [[nodiscard]] const std::string& engine_name() const { return name_; }
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
  // put() of each of `keys` (distinct) through one upsert_batch(); the items it published, in
  // order (0 where the engine was full), go to `refs`.
  void put_batch(const std::vector<std::string>& keys, Model& model, std::vector<ItemRef>& refs);

  // Every key and reference the engine holds, by scan.
  [[nodiscard]] Model contents();

  // The tree as the engine's inspector reads it (a report with one problem if the engine has
  // no inspector).
  [[nodiscard]] TreeReport inspect();

  // Full check: the inspector's invariants, the engine agrees with it (size, lookup of every
  // leaf, scan order, for_each_block = the node set, each once), each node's block has its
  // layout's size class, and, with `accounting`, the allocator's bytes_in_use equals the blocks
  // of the nodes plus the items in the tree. "" when all hold.
  [[nodiscard]] std::string check(bool accounting = true);

 private:
  void create_engine();

  std::string name_;
  TreeInspector inspect_;
  std::unique_ptr<pm::Pool> pool_;
  std::unique_ptr<pm::Allocator> allocator_;
  std::unique_ptr<IndexEngine> engine_;
  std::string restart_problems_;
};

// prefix + decimal n (std::string operator+ trips a g++ 12 -Wrestrict false positive at -O3).
[[nodiscard]] std::string numbered(std::string_view prefix, std::uint64_t n);

// 8-byte big-endian encoding of `v` (integer order = key order).
[[nodiscard]] std::string be64(std::uint64_t v);

// `n` distinct 8-byte keys spread over the key space, in an order shuffled by `seed`.
[[nodiscard]] std::vector<std::string> shuffled_keys(std::size_t n, std::uint64_t seed);

// An engine whose "items" are the indexes of `keys` (no pool of items): ref(i) and ref(i + n)
// (n keys) both hold keys[i]. Every key read goes through key_of and is counted, so a test can
// check how many keys a search compares (fingerprints, key tags).
class CountingEngine {
 public:
  CountingEngine(const std::string& engine, std::vector<std::string> keys);
  [[nodiscard]] static ItemRef ref(std::size_t i) { return 16 * (i + 1); }
  [[nodiscard]] IndexEngine& engine() { return *engine_; }
  [[nodiscard]] std::size_t reads() const { return reads_; }
  void reset() { reads_ = 0; }

 private:
  std::vector<std::string> keys_;
  std::size_t reads_ = 0;
  std::unique_ptr<IndexEngine> engine_;
};

}  // namespace pmcached::engine::testing

// IndexEngine: the pluggable ordered index under the store.
//
// An index engine is an ordered map from a key (1..250 bytes, any bytes, keys may be
// prefixes of other keys) to an 8-byte item reference. Item semantics (cas, expiry,
// append, ...) live in the store above; an engine only maps keys to references.
//
// Thread safety: every method may be called concurrently from many threads. The store
// serialises operations on the same key (lock striping), so an engine needs only
// single-operation safety: concurrent calls on different keys must be safe, and each
// call must appear atomic.
//
// Durability (persistent engines): when upsert() or erase() returns, the change is
// flushed and fenced; a crash at any moment leaves the old or the new mapping, never a
// torn one (failure-atomic single operations).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pmcached::engine {

// Reference to an item record in the item heap. 0 means "no item".
using ItemRef = std::uint64_t;
inline constexpr ItemRef kNoItem = 0;

struct EngineCapabilities {
  bool ordered = false;       // scan() visits keys in byte order
  bool concurrent = false;    // safe for concurrent calls on different keys
  bool persistent = false;    // survives process crash and restart
  bool group_commit = false;  // upsert_batch() makes a batch durable with one wait, not one per key
};

// One named statistic, for `stats engine`.
struct EngineStat {
  std::string name;
  std::string value;
};

enum class UpsertStatus : std::uint8_t {
  kInserted,     // key was absent; `previous` is kNoItem
  kReplaced,     // key was present; `previous` holds the old reference
  kOutOfMemory,  // the engine could not allocate a node; nothing changed
};

struct UpsertResult {
  UpsertStatus status;
  ItemRef previous;
};

// One key of upsert_batch(): `key` -> `ref` in, `result` out.
struct BatchUpsert {
  std::string_view key;
  ItemRef ref = kNoItem;
  UpsertResult result{UpsertStatus::kOutOfMemory, kNoItem};
};

class IndexEngine {
 public:
  virtual ~IndexEngine() = default;

  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  [[nodiscard]] virtual EngineCapabilities capabilities() const noexcept = 0;

  // Returns the reference stored for `key`, or kNoItem.
  [[nodiscard]] virtual ItemRef lookup(std::string_view key) const noexcept = 0;

  // Maps `key` to `ref` (insert or replace), failure-atomically.
  [[nodiscard]] virtual UpsertResult upsert(std::string_view key, ItemRef ref) noexcept = 0;

  // upsert() of every entry, in order (distinct keys), each failure-atomic on its own. When it
  // returns, all of them are durable; a crash before leaves each key old or new, independently.
  // An engine with capabilities().group_commit holds its lock once and waits once for the
  // write-backs of the whole batch (docs/TAIL_LATENCY.md, "group commit"); the default is one
  // upsert() after the other.
  virtual void upsert_batch(std::span<BatchUpsert> batch) noexcept {
    for (BatchUpsert& entry : batch) entry.result = upsert(entry.key, entry.ref);
  }

  // Removes `key`; returns the reference it had, or kNoItem if it was absent.
  [[nodiscard]] virtual ItemRef erase(std::string_view key) noexcept = 0;

  // Visits keys >= `from` in key order until `visit` returns false. The key view is
  // valid only during the call. Concurrent changes may or may not be seen.
  virtual void scan(std::string_view from,
                    const std::function<bool(std::string_view key, ItemRef ref)>& visit) const = 0;

  // Number of keys in the index.
  [[nodiscard]] virtual std::size_t size() const noexcept = 0;

  // Engine-specific statistics (node counts, bytes, flushes per operation, ...).
  [[nodiscard]] virtual std::vector<EngineStat> stats() const = 0;

  // Persistent engines: called once after opening an existing pool, before any other call;
  // repairs what a crash left half done (e.g. WORT's header repair). Volatile engines: no-op.
  virtual void recover() {}

  // Persistent engines: visits the pool offset of every block the engine owns (its nodes, not
  // the items), so the allocator can rebuild its free space. Volatile engines: no-op.
  virtual void for_each_block(const std::function<void(std::uint64_t offset)>& /*visit*/) const {}

  // Persistent engines, once at start-up after recover() and the allocator's rebuild: removes
  // the entries that refer to `corrupt` (records whose checksum failed), durably as erase() does,
  // and rebuilds whatever volatile structure was derived from their keys. Returns the references
  // it removed. A corrupt record's key may itself be damaged and lead elsewhere (even to another
  // item), so an engine finds the entries by position where it can. This default finds each by
  // the key read from its record and removes it only if that key still leads to it.
  [[nodiscard]] virtual std::vector<ItemRef> drop_corrupt(const std::vector<ItemRef>& corrupt);
};

}  // namespace pmcached::engine

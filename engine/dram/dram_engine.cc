// DramEngine: an abseil B-tree of 32-byte entries (key head + slot) for order, an abseil hash
// set for point operations, both over one slot per key, under an EngineMutex. See dram_factory.h.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>

#include <absl/container/btree_set.h>
#include <absl/container/flat_hash_set.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "engine/dram/dram_factory.h"
#include "engine/engine_mutex.h"

namespace pmcached::engine {
namespace {

// A key's head: its first 23 bytes (zero padded) and then its length capped at 24, as three
// big-endian integers. Heads order like the keys they come from (a zero-padded shorter key is a
// prefix of the longer one, and its smaller length byte puts it first), and equal heads mean
// equal keys unless both keys are longer than 23 bytes. So for keys of up to 23 bytes, such as
// memcached's usual "prefix_number" keys, the tree never reads item memory; longer keys read it
// only when their first 23 bytes tie.
struct KeyHead {
  static constexpr std::size_t kInlineBytes = 23;

  std::uint64_t word[3];

  friend bool operator==(const KeyHead&, const KeyHead&) = default;
  friend bool operator<(const KeyHead& a, const KeyHead& b) {
    if (a.word[0] != b.word[0]) return a.word[0] < b.word[0];
    if (a.word[1] != b.word[1]) return a.word[1] < b.word[1];
    return a.word[2] < b.word[2];
  }
  // Whether the head holds the whole key (so equal heads mean equal keys).
  [[nodiscard]] bool holds_whole_key() const noexcept { return (word[2] & 0xff) <= kInlineBytes; }
};

KeyHead key_head(std::string_view key) noexcept {
  unsigned char bytes[24] = {};
  std::memcpy(bytes, key.data(), std::min(key.size(), KeyHead::kInlineBytes));
  bytes[23] = static_cast<unsigned char>(std::min<std::size_t>(key.size(), 24));
  KeyHead head{};
  for (int w = 0; w < 3; ++w) {
    for (int i = 0; i < 8; ++i) head.word[w] = (head.word[w] << 8) | bytes[w * 8 + i];
  }
  return head;
}

// A key's item, at one address for as long as the key is indexed: the tree's entry and the hash
// index's both point here, so replacing a key's item (a set of a key that exists, the common
// case) writes this one word, found through the hash index without descending the tree.
union Slot {
  ItemRef ref;
  Slot* next_free;  // while in SlotPool's free list
};
static_assert(sizeof(Slot) == 8);

// Slots in blocks of kBlock, recycled through a free list. Called with the engine's lock held
// exclusive.
class SlotPool {
 public:
  // Throws std::bad_alloc.
  Slot* make(ItemRef ref) {
    if (free_ == nullptr) {
      blocks_.push_back(std::make_unique<Slot[]>(kBlock));
      Slot* block = blocks_.back().get();
      for (std::size_t i = 0; i < kBlock; ++i) release(&block[i]);
    }
    Slot* slot = free_;
    free_ = slot->next_free;
    slot->ref = ref;
    return slot;
  }
  void release(Slot* slot) noexcept {
    slot->next_free = free_;
    free_ = slot;
  }

 private:
  static constexpr std::size_t kBlock = 4096;
  std::vector<std::unique_ptr<Slot[]>> blocks_;
  Slot* free_ = nullptr;
};

// A tree entry: 32 bytes. `target` leads to the key's item: it is the item's reference, or with
// the hash index the address of the key's Slot. The key lives in the item
// (EngineContext::key_of), read only to break a tie between two heads of long keys.
struct Entry {
  KeyHead head;
  mutable std::uint64_t target;  // replaced in place: the key is unchanged
};

// The item an entry's target leads to.
class Targets {
 public:
  explicit Targets(bool via_slots) : via_slots_(via_slots) {}
  [[nodiscard]] ItemRef item(std::uint64_t target) const noexcept {
    return via_slots_ ? reinterpret_cast<const Slot*>(target)->ref : target;
  }

 private:
  bool via_slots_;
};

// absl::btree_set with 1 KiB nodes: its default of 256 bytes holds 7 of our 32-byte slots, so a
// tree of 500k keys was 7 levels of cache misses deep; 1 KiB nodes (about 30 slots) take 4-5.
// store_bench (500k keys, 1 thread, 3 x 3 repetitions): GET 619-670 -> 551-600 ns, SET
// 643-690 -> 545-575 ns; 4 KiB nodes made SETs slower again (579-601 ns).
constexpr std::size_t kTreeNodeBytes = 1024;
template <typename T, typename Less>
using WideBtreeSet = absl::container_internal::btree_set_container<
    absl::container_internal::btree<absl::container_internal::set_params<
        T, Less, std::allocator<T>, kTreeNodeBytes, /*IsMulti=*/false>>>;

// A key being looked up.
struct Probe {
  KeyHead head;
  std::string_view key;
};

class EntryLess {
 public:
  using is_transparent = void;

  EntryLess(const std::function<std::string_view(ItemRef)>* key_of, Targets targets)
      : key_of_(key_of), targets_(targets) {}

  // Equal heads that hold whole keys are equal keys: no item is read.
  bool operator()(const Entry& a, const Entry& b) const {
    if (a.head != b.head) return a.head < b.head;
    return !a.head.holds_whole_key() && key(a) < key(b);
  }
  bool operator()(const Entry& a, const Probe& b) const {
    if (a.head != b.head) return a.head < b.head;
    return !a.head.holds_whole_key() && key(a) < b.key;
  }
  bool operator()(const Probe& a, const Entry& b) const {
    if (a.head != b.head) return a.head < b.head;
    return !a.head.holds_whole_key() && a.key < key(b);
  }

 private:
  std::string_view key(const Entry& e) const { return (*key_of_)(targets_.item(e.target)); }

  const std::function<std::string_view(ItemRef)>* key_of_;
  Targets targets_;
};

// The hash index: a key's 64-bit hash beside its slot and a copy of the slot's reference, so
// that growing a table reads only the table (not one slot and item per key), a probe reads an
// item only on a full hash match, and a lookup reads no slot.
// It is kHashShards tables chosen by the hash's top byte: a table grows all at once, by
// rehashing every element under the engine's exclusive lock, which as one table stalled the
// engine 33 ms at 1M keys and 124 ms at 3.7M; a shard holds 1/256 of them.
struct Hashed {
  std::uint64_t hash;
  Slot* slot;
  // A copy of slot->ref, kept equal to it by every write, so that a lookup reads the item without
  // first missing on the slot (not part of the element's identity, hence mutable).
  mutable ItemRef ref;
};
constexpr std::size_t kHashShards = 256;
std::size_t shard_of(std::uint64_t hash) noexcept { return hash >> 56; }

struct HashedProbe {
  std::uint64_t hash;
  std::string_view key;
};

std::uint64_t hash_key(std::string_view key) noexcept {
  return XXH3_64bits(key.data(), key.size());
}

// A probe that matches an entry by its hash alone, reading no item (upsert_batch's prefetch).
struct HashOnlyProbe {
  std::uint64_t hash;
};

struct HashedHash {
  using is_transparent = void;
  std::size_t operator()(const Hashed& h) const noexcept { return h.hash; }
  std::size_t operator()(const HashedProbe& p) const noexcept { return p.hash; }
  std::size_t operator()(const HashOnlyProbe& p) const noexcept { return p.hash; }
};

class HashedEq {
 public:
  using is_transparent = void;

  explicit HashedEq(const std::function<std::string_view(ItemRef)>* key_of) : key_of_(key_of) {}

  bool operator()(const Hashed& a, const Hashed& b) const noexcept { return a.slot == b.slot; }
  bool operator()(const Hashed& a, const HashedProbe& b) const {
    return a.hash == b.hash && (*key_of_)(a.ref) == b.key;
  }
  bool operator()(const HashedProbe& a, const Hashed& b) const { return (*this)(b, a); }
  bool operator()(const Hashed& a, const HashOnlyProbe& b) const noexcept {
    return a.hash == b.hash;
  }
  bool operator()(const HashOnlyProbe& a, const Hashed& b) const noexcept { return (*this)(b, a); }

 private:
  const std::function<std::string_view(ItemRef)>* key_of_;
};

class DramEngine final : public IndexEngine {
 public:
  explicit DramEngine(const EngineContext& context)
      : key_of_(context.key_of),
        hashed_(context.hash_index),
        targets_(hashed_),
        tree_(EntryLess(&key_of_, targets_)) {
    if (!hashed_) return;
    index_.reserve(kHashShards);
    for (std::size_t i = 0; i < kHashShards; ++i)
      index_.emplace_back(0, HashedHash(), HashedEq(&key_of_));
  }

  [[nodiscard]] std::string_view name() const noexcept override { return kDramEngineName; }
  [[nodiscard]] EngineCapabilities capabilities() const noexcept override {
    return {.ordered = true, .concurrent = true, .persistent = false};
  }

  [[nodiscard]] ItemRef lookup(std::string_view key) const noexcept override {
    if (hashed_) {
      const HashedProbe probe{hash_key(key), key};
      const HashIndex& shard = index_[shard_of(probe.hash)];
      std::shared_lock lock(mutex_);
      const auto it = shard.find(probe);
      return it == shard.end() ? kNoItem : it->ref;
    }
    const Probe probe{key_head(key), key};
    std::shared_lock lock(mutex_);
    const auto it = tree_.find(probe);
    return it == tree_.end() ? kNoItem : it->target;
  }

  [[nodiscard]] UpsertResult upsert(std::string_view key, ItemRef ref) noexcept override {
    return hashed_ ? upsert_hashed(key, ref) : upsert_tree(key, ref);
  }

  // With the hash index, a group's keys are found together: their table lines, then the slots
  // whose hashes match, then the items those hold (whose keys the upserts compare) are requested
  // for the whole group before the first upsert reads any, so that their misses overlap; and the
  // group takes the lock once. The store's sets of one turn arrive here (store_batch.cc).
  void upsert_batch(std::span<BatchUpsert> batch) noexcept override {
    if (!hashed_) {
      IndexEngine::upsert_batch(batch);
      return;
    }
    for (std::size_t begin = 0; begin < batch.size(); begin += kBatchGroup) {
      const std::span<BatchUpsert> group =
          batch.subspan(begin, std::min(kBatchGroup, batch.size() - begin));
      std::array<std::uint64_t, kBatchGroup> hashes{};
      for (std::size_t i = 0; i < group.size(); ++i) hashes[i] = hash_key(group[i].key);
      std::unique_lock lock(mutex_);
      prefetch_group(group, hashes);
      for (std::size_t i = 0; i < group.size(); ++i) {
        group[i].result = upsert_hashed_locked(group[i].key, hashes[i], group[i].ref);
      }
    }
  }

  [[nodiscard]] ItemRef erase(std::string_view key) noexcept override {
    return hashed_ ? erase_hashed(key) : erase_tree(key);
  }

  void scan(std::string_view from,
            const std::function<bool(std::string_view, ItemRef)>& visit) const override {
    std::shared_lock lock(mutex_);
    for (auto it = tree_.lower_bound(Probe{key_head(from), from}); it != tree_.end(); ++it) {
      const ItemRef ref = targets_.item(it->target);
      if (!visit(key_of_(ref), ref)) break;
    }
  }

  [[nodiscard]] std::size_t size() const noexcept override {
    return size_.load(std::memory_order_relaxed);
  }

  [[nodiscard]] std::vector<EngineStat> stats() const override {
    return {
        {"engine", std::string(kDramEngineName)},
        {"persistent", "no (volatile baseline)"},
        {"keys", std::to_string(size())},
        {"hash_index", hashed_ ? "yes" : "no"},
    };
  }

 private:
  UpsertResult upsert_tree(std::string_view key, ItemRef ref) noexcept {
    const Probe probe{key_head(key), key};
    std::unique_lock lock(mutex_);
    auto it = tree_.lower_bound(probe);
    if (it != tree_.end() && it->head == probe.head &&
        (probe.head.holds_whole_key() || key_of_(it->target) == key)) {
      const ItemRef previous = it->target;
      it->target = ref;
      return {UpsertStatus::kReplaced, previous};
    }
    try {
      tree_.insert(it, Entry{probe.head, ref});
    } catch (const std::bad_alloc&) {
      return {UpsertStatus::kOutOfMemory, kNoItem};
    }
    size_.fetch_add(1, std::memory_order_relaxed);
    return {UpsertStatus::kInserted, kNoItem};
  }

  UpsertResult upsert_hashed(std::string_view key, ItemRef ref) noexcept {
    const std::uint64_t hash = hash_key(key);
    std::unique_lock lock(mutex_);
    return upsert_hashed_locked(key, hash, ref);
  }

  // upsert_hashed() of a key whose hash is `hash`, mutex_ held exclusive.
  UpsertResult upsert_hashed_locked(std::string_view key, std::uint64_t hash,
                                    ItemRef ref) noexcept {
    const HashedProbe probe{hash, key};
    HashIndex& shard = index_[shard_of(hash)];
    if (const auto it = shard.find(probe); it != shard.end()) {
      const ItemRef previous = it->ref;
      it->ref = ref;
      it->slot->ref = ref;
      return {UpsertStatus::kReplaced, previous};
    }
    Slot* slot = nullptr;
    bool in_tree = false;
    try {
      slot = slots_.make(ref);
      tree_.insert(Entry{key_head(key), reinterpret_cast<std::uint64_t>(slot)});
      in_tree = true;
      shard.insert(Hashed{probe.hash, slot, ref});
    } catch (const std::bad_alloc&) {
      if (in_tree) tree_.erase(Probe{key_head(key), key});
      if (slot != nullptr) slots_.release(slot);
      return {UpsertStatus::kOutOfMemory, kNoItem};
    }
    size_.fetch_add(1, std::memory_order_relaxed);
    return {UpsertStatus::kInserted, kNoItem};
  }

  static constexpr std::size_t kBatchGroup = 32;

  // See upsert_batch(); mutex_ held. Reads only the tables and the items of matching hashes.
  void prefetch_group(std::span<const BatchUpsert> group,
                      const std::array<std::uint64_t, kBatchGroup>& hashes) const {
    for (std::size_t i = 0; i < group.size(); ++i) {
      index_[shard_of(hashes[i])].prefetch(HashedProbe{hashes[i], group[i].key});
    }
    std::array<ItemRef, kBatchGroup> refs{};
    for (std::size_t i = 0; i < group.size(); ++i) {
      const HashIndex& shard = index_[shard_of(hashes[i])];
      const auto it = shard.find(HashOnlyProbe{hashes[i]});
      if (it == shard.end()) continue;
      refs[i] = it->ref;
      __builtin_prefetch(it->slot);  // a replace writes it
    }
    // key_of() reads the item's header for the key's length, a miss that no later instruction of
    // the loop waits for, so those of several items overlap too.
    for (std::size_t i = 0; i < group.size(); ++i) {
      if (refs[i] != kNoItem) __builtin_prefetch(key_of_(refs[i]).data());
    }
  }

  ItemRef erase_tree(std::string_view key) noexcept {
    std::unique_lock lock(mutex_);
    const auto it = tree_.find(Probe{key_head(key), key});
    if (it == tree_.end()) return kNoItem;
    const ItemRef previous = it->target;
    tree_.erase(it);
    size_.fetch_sub(1, std::memory_order_relaxed);
    return previous;
  }

  ItemRef erase_hashed(std::string_view key) noexcept {
    const HashedProbe probe{hash_key(key), key};
    HashIndex& shard = index_[shard_of(probe.hash)];
    std::unique_lock lock(mutex_);
    const auto it = shard.find(probe);
    if (it == shard.end()) return kNoItem;
    Slot* slot = it->slot;
    const ItemRef previous = slot->ref;
    tree_.erase(Probe{key_head(key), key});  // reads the slot's item on a tie of long keys
    shard.erase(it);
    slots_.release(slot);
    size_.fetch_sub(1, std::memory_order_relaxed);
    return previous;
  }

  const std::function<std::string_view(ItemRef)> key_of_;
  const bool hashed_;
  const Targets targets_;
  mutable EngineMutex mutex_;
  SlotPool slots_;
  WideBtreeSet<Entry, EntryLess> tree_;
  using HashIndex = absl::flat_hash_set<Hashed, HashedHash, HashedEq>;
  std::vector<HashIndex> index_;  // kHashShards tables with the hash index, else none
  std::atomic<std::size_t> size_{0};
};

}  // namespace

std::unique_ptr<IndexEngine> make_dram_engine(const EngineContext& context) {
  return std::make_unique<DramEngine>(context);
}

}  // namespace pmcached::engine

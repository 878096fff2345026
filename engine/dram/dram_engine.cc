// DramEngine: an abseil B-tree of 32-byte slots (key head + item) under an EngineMutex. See
// dram_factory.h.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>

#include <absl/container/btree_set.h>

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

// A tree slot: 32 bytes. The key lives in the item (EngineContext::key_of), read only to break
// a tie between two heads of long keys; `ref` may be replaced in place, since the key is
// unchanged.
struct Entry {
  KeyHead head;
  mutable ItemRef ref;
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

  explicit EntryLess(const std::function<std::string_view(ItemRef)>* key_of) : key_of_(key_of) {}

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
  std::string_view key(const Entry& e) const { return (*key_of_)(e.ref); }

  const std::function<std::string_view(ItemRef)>* key_of_;
};

class DramEngine final : public IndexEngine {
 public:
  explicit DramEngine(const EngineContext& context)
      : key_of_(context.key_of), set_(EntryLess(&key_of_)) {}

  [[nodiscard]] std::string_view name() const noexcept override { return kDramEngineName; }
  [[nodiscard]] EngineCapabilities capabilities() const noexcept override {
    return {.ordered = true, .concurrent = true, .persistent = false};
  }

  [[nodiscard]] ItemRef lookup(std::string_view key) const noexcept override {
    std::shared_lock lock(mutex_);
    const auto it = set_.find(Probe{key_head(key), key});
    return it == set_.end() ? kNoItem : it->ref;
  }

  [[nodiscard]] UpsertResult upsert(std::string_view key, ItemRef ref) noexcept override {
    const Probe probe{key_head(key), key};
    std::unique_lock lock(mutex_);
    auto it = set_.lower_bound(probe);
    if (it != set_.end() && it->head == probe.head &&
        (probe.head.holds_whole_key() || key_of_(it->ref) == key)) {
      const ItemRef previous = it->ref;
      it->ref = ref;
      return {UpsertStatus::kReplaced, previous};
    }
    try {
      set_.insert(it, Entry{probe.head, ref});
    } catch (const std::bad_alloc&) {
      return {UpsertStatus::kOutOfMemory, kNoItem};
    }
    size_.fetch_add(1, std::memory_order_relaxed);
    return {UpsertStatus::kInserted, kNoItem};
  }

  [[nodiscard]] ItemRef erase(std::string_view key) noexcept override {
    std::unique_lock lock(mutex_);
    const auto it = set_.find(Probe{key_head(key), key});
    if (it == set_.end()) return kNoItem;
    const ItemRef previous = it->ref;
    set_.erase(it);
    size_.fetch_sub(1, std::memory_order_relaxed);
    return previous;
  }

  void scan(std::string_view from,
            const std::function<bool(std::string_view, ItemRef)>& visit) const override {
    std::shared_lock lock(mutex_);
    for (auto it = set_.lower_bound(Probe{key_head(from), from}); it != set_.end(); ++it) {
      if (!visit(key_of_(it->ref), it->ref)) break;
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
    };
  }

 private:
  const std::function<std::string_view(ItemRef)> key_of_;
  mutable EngineMutex mutex_;
  WideBtreeSet<Entry, EntryLess> set_;
  std::atomic<std::size_t> size_{0};
};

}  // namespace

std::unique_ptr<IndexEngine> make_dram_engine(const EngineContext& context) {
  return std::make_unique<DramEngine>(context);
}

}  // namespace pmcached::engine

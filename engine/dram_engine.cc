// DramEngine: an abseil B-tree of 16-byte slots under an EngineMutex. See dram_engine.h.
#include "engine/dram_engine.h"

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

#include "engine/engine_mutex.h"

namespace pmcached::engine {
namespace {

// The first 16 key bytes as two big-endian integers (zero padded): comparing these orders
// keys by their first 16 bytes, so most comparisons in the tree touch no item memory.
struct KeyPrefix {
  std::uint64_t high;
  std::uint64_t low;

  friend bool operator==(const KeyPrefix&, const KeyPrefix&) = default;
  friend bool operator<(const KeyPrefix& a, const KeyPrefix& b) {
    return a.high != b.high ? a.high < b.high : a.low < b.low;
  }
};

KeyPrefix key_prefix(std::string_view key) noexcept {
  unsigned char bytes[16] = {};
  std::memcpy(bytes, key.data(), std::min<std::size_t>(key.size(), sizeof bytes));
  KeyPrefix prefix{0, 0};
  for (int i = 0; i < 8; ++i) prefix.high = (prefix.high << 8) | bytes[i];
  for (int i = 8; i < 16; ++i) prefix.low = (prefix.low << 8) | bytes[i];
  return prefix;
}

// A tree slot: 24 bytes, so a 256-byte abseil node holds 10 of them. The key itself lives in
// the item (EngineContext::key_of); `ref` may be replaced in place, since the key is unchanged.
struct Entry {
  KeyPrefix prefix;
  mutable ItemRef ref;
};

// A key being looked up.
struct Probe {
  KeyPrefix prefix;
  std::string_view key;
};

class EntryLess {
 public:
  using is_transparent = void;

  explicit EntryLess(const std::function<std::string_view(ItemRef)>* key_of) : key_of_(key_of) {}

  bool operator()(const Entry& a, const Entry& b) const {
    return a.prefix != b.prefix ? a.prefix < b.prefix : key(a) < key(b);
  }
  bool operator()(const Entry& a, const Probe& b) const {
    return a.prefix != b.prefix ? a.prefix < b.prefix : key(a) < b.key;
  }
  bool operator()(const Probe& a, const Entry& b) const {
    return a.prefix != b.prefix ? a.prefix < b.prefix : a.key < key(b);
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
    const auto it = set_.find(Probe{key_prefix(key), key});
    return it == set_.end() ? kNoItem : it->ref;
  }

  [[nodiscard]] UpsertResult upsert(std::string_view key, ItemRef ref) noexcept override {
    const Probe probe{key_prefix(key), key};
    std::unique_lock lock(mutex_);
    auto it = set_.lower_bound(probe);
    if (it != set_.end() && it->prefix == probe.prefix && key_of_(it->ref) == key) {
      const ItemRef previous = it->ref;
      it->ref = ref;
      return {UpsertStatus::kReplaced, previous};
    }
    try {
      set_.insert(it, Entry{probe.prefix, ref});
    } catch (const std::bad_alloc&) {
      return {UpsertStatus::kOutOfMemory, kNoItem};
    }
    size_.fetch_add(1, std::memory_order_relaxed);
    return {UpsertStatus::kInserted, kNoItem};
  }

  [[nodiscard]] ItemRef erase(std::string_view key) noexcept override {
    std::unique_lock lock(mutex_);
    const auto it = set_.find(Probe{key_prefix(key), key});
    if (it == set_.end()) return kNoItem;
    const ItemRef previous = it->ref;
    set_.erase(it);
    size_.fetch_sub(1, std::memory_order_relaxed);
    return previous;
  }

  void scan(std::string_view from,
            const std::function<bool(std::string_view, ItemRef)>& visit) const override {
    std::shared_lock lock(mutex_);
    for (auto it = set_.lower_bound(Probe{key_prefix(from), from}); it != set_.end(); ++it) {
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
  absl::btree_set<Entry, EntryLess> set_;
  std::atomic<std::size_t> size_{0};
};

}  // namespace

std::unique_ptr<IndexEngine> make_dram_engine(const EngineContext& context) {
  return std::make_unique<DramEngine>(context);
}

}  // namespace pmcached::engine

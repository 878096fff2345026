// DramEngine: absl::btree_map under a shared_mutex. See dram_engine.h.
#include "engine/dram_engine.h"

#include <atomic>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>

#include <absl/container/btree_map.h>

namespace pmcached::engine {
namespace {

// Debian's abseil has its own string_view type; convert without copying.
absl::string_view as_absl(std::string_view s) noexcept { return {s.data(), s.size()}; }

class DramEngine final : public IndexEngine {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return kDramEngineName; }

  [[nodiscard]] EngineCapabilities capabilities() const noexcept override {
    return {.ordered = true, .concurrent = true, .persistent = false};
  }

  [[nodiscard]] ItemRef lookup(std::string_view key) const noexcept override {
    std::shared_lock lock(mutex_);
    const auto it = map_.find(as_absl(key));
    return it == map_.end() ? kNoItem : it->second;
  }

  [[nodiscard]] UpsertResult upsert(std::string_view key, ItemRef ref) noexcept override {
    std::unique_lock lock(mutex_);
    auto it = map_.lower_bound(as_absl(key));
    if (it != map_.end() && std::string_view(it->first) == key) {
      const ItemRef previous = it->second;
      it->second = ref;
      return {UpsertStatus::kReplaced, previous};
    }
    try {
      map_.emplace_hint(it, std::string(key), ref);
    } catch (const std::bad_alloc&) {
      return {UpsertStatus::kOutOfMemory, kNoItem};
    }
    size_.fetch_add(1, std::memory_order_relaxed);
    return {UpsertStatus::kInserted, kNoItem};
  }

  [[nodiscard]] ItemRef erase(std::string_view key) noexcept override {
    std::unique_lock lock(mutex_);
    const auto it = map_.find(as_absl(key));
    if (it == map_.end()) return kNoItem;
    const ItemRef previous = it->second;
    map_.erase(it);
    size_.fetch_sub(1, std::memory_order_relaxed);
    return previous;
  }

  void scan(std::string_view from,
            const std::function<bool(std::string_view, ItemRef)>& visit) const override {
    std::shared_lock lock(mutex_);
    for (auto it = map_.lower_bound(as_absl(from)); it != map_.end(); ++it) {
      if (!visit(std::string_view(it->first), it->second)) break;
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
  mutable std::shared_mutex mutex_;
  absl::btree_map<std::string, ItemRef> map_;
  std::atomic<std::size_t> size_{0};
};

}  // namespace

std::unique_ptr<IndexEngine> make_dram_engine() { return std::make_unique<DramEngine>(); }

}  // namespace pmcached::engine

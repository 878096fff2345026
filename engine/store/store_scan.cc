// Store::scan_items and Store::set_memory_limit: what the admin commands (stats cachedump,
// lru_crawler metadump, cache_memlimit) ask of the store.
#include <string>
#include <vector>

#include "engine/store/store.h"
#include "engine/store/store_impl.h"

namespace pmcached::engine {
namespace {

// Keys copied per batch: the engine's scan holds its own lock, so keys are copied out and
// each is then read under its stripe lock (never a stripe mutex while scanning).
constexpr std::size_t kScanBatch = 256;

}  // namespace

void Store::scan_items(std::string_view from, const std::function<bool(const ItemView&)>& visit) {
  std::string cursor(from);
  bool skip_cursor = false;  // the batch before ended at `cursor`, already visited
  std::vector<std::string> batch;
  for (;;) {
    batch.clear();
    impl_->scan_keys(cursor, [&](std::string_view key) {
      if (skip_cursor && key == cursor) return true;
      batch.emplace_back(key);
      return batch.size() < kScanBatch;
    });
    for (const std::string& key : batch) {
      Stripe& stripe = impl_->stripes.for_key(key);
      std::lock_guard lock(stripe.mutex);
      const ItemHeader* item = impl_->lookup_record(key);
      if (item == nullptr || impl_->is_dead(*item, impl_->clock.now())) continue;
      if (!visit(impl_->view(*item))) return;
    }
    if (batch.size() < kScanBatch) return;
    cursor = batch.back();
    skip_cursor = true;
  }
}

bool Store::set_memory_limit(std::size_t bytes) noexcept {
  if (impl_->pool != nullptr || impl_->records) return false;
  impl_->memory_limit.store(bytes, std::memory_order_relaxed);
  return true;
}

}  // namespace pmcached::engine

// BTreeEngine: the shell of the persistent B+-trees. See btree_engine.h.
#include "engine/btree/btree_engine.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "engine/btree/key_tag.h"
#include "engine/engine_stats.h"
#include "engine/pm/fault_injection.h"
#include "engine/pm/persistence.h"

namespace pmcached::engine::btree {

bool visit_sorted(std::vector<KeyedRef>& entries, std::string_view from,
                  const std::function<bool(std::string_view key, ItemRef ref)>& visit) {
  std::sort(entries.begin(), entries.end(),
            [](const KeyedRef& a, const KeyedRef& b) { return a.key < b.key; });
  for (const KeyedRef& e : entries) {
    if (e.key >= from && !visit(e.key, e.ref)) return false;
  }
  return true;
}

BTreeEngine::BTreeEngine(const EngineContext& context, std::string_view name, std::uint64_t magic)
    : binding_(context, name),
      pool_(&binding_.pool()),
      allocator_(&binding_.allocator()),
      region_(&pool_->region()),
      key_of_(context.key_of),
      magic_(magic) {
  if (pool_->heap_end() > kMaxTaggedPoolBytes) {
    throw std::runtime_error("the " + std::string(name) +
                             " engine supports pools of at most 256 TiB (48-bit references; "
                             "engine/btree/key_tag.h)");
  }
  const std::uint64_t root = pool_->root();
  if (root != 0 && (!in_heap(root, sizeof(Meta)) || at<Meta>(root)->magic != magic_)) {
    throw std::runtime_error("pool is corrupt: the " + std::string(name) +
                             " meta block at pool offset " + std::to_string(root) + " is not one");
  }
}

Meta* BTreeEngine::meta() const noexcept {
  const std::uint64_t root = pool_->root();
  return root == 0 ? nullptr : at<Meta>(root);
}

Meta* BTreeEngine::ensure_meta() noexcept {
  if (Meta* m = meta()) return m;
  const std::uint64_t offset = allocate_node(sizeof(Meta));
  if (offset == 0) return nullptr;
  at<Meta>(offset)->magic = magic_;
  flush_new_node(offset, sizeof(Meta));
  region_->store_u64_persist(pool_->root_field(), offset);
  return at<Meta>(offset);
}

std::uint64_t BTreeEngine::allocate_node(std::size_t bytes) noexcept {
  const std::uint64_t offset = allocator_->allocate(bytes, pm::BlockUse::kIndex);
  if (offset != 0) std::memset(at<char>(offset), 0, bytes);
  return offset;
}

void BTreeEngine::flush_new_node(std::uint64_t offset, std::size_t bytes) noexcept {
  if (!pm::FaultInjection::active(pm::Fault::kSkipNewNodeFlush))
    region_->flush(at<char>(offset), bytes);
}

bool BTreeEngine::in_heap(std::uint64_t offset, std::size_t bytes) const noexcept {
  return offset % 8 == 0 && offset >= pool_->heap_begin() && offset <= pool_->heap_end() &&
         bytes <= pool_->heap_end() - offset;
}

void BTreeEngine::for_each_block(const std::function<void(std::uint64_t offset)>& visit) const {
  std::shared_lock lock(mutex_);
  if (pool_->root() == 0) return;
  visit(pool_->root());
  visit_blocks(visit);
}

std::vector<EngineStat> BTreeEngine::stats() const {
  TreeFigures f;
  std::vector<EngineStat> extras;
  {
    std::shared_lock lock(mutex_);
    f = figures();
    extra_stats(extras);
  }
  const std::uint64_t keys = size();
  std::uint64_t nodes = 0;
  for (const auto& [type, count] : f.nodes_by_type) nodes += count;
  std::vector<EngineStat> out = {
      {"engine", std::string(name())},
      {"persistent", "yes"},
      {"keys", std::to_string(keys)},
      {"nodes", std::to_string(nodes)},
  };
  for (const auto& [type, count] : f.nodes_by_type) {
    out.push_back({"nodes_" + type, std::to_string(count)});
  }
  out.push_back({"node_bytes", std::to_string(f.node_bytes)});
  out.push_back({"dram_node_bytes", std::to_string(f.dram_bytes)});
  out.push_back({"bytes_per_key", format_ratio(f.node_bytes, keys)});
  out.push_back({"leaf_depth_avg", format_ratio(f.leaf_depth_sum, keys)});
  out.insert(out.end(), extras.begin(), extras.end());
  append_persist_stats(out);
  return out;
}

}  // namespace pmcached::engine::btree

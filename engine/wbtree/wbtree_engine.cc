// WbTreeEngine: construction, node access, lookup, ordered scan, figures and the block walk.
// See wbtree_factory.h.
#include "engine/wbtree/wbtree_engine.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <string>

#include "engine/wbtree/wbtree_factory.h"

namespace pmcached::engine {
namespace wbtree {

WbTreeEngine::WbTreeEngine(const EngineContext& context)
    : BTreeEngine(context, kWbTreeEngineName, kMetaMagic) {}  // recover() counts the keys

std::string_view WbTreeEngine::name() const noexcept { return kWbTreeEngineName; }

std::uint64_t WbTreeEngine::root() const noexcept {
  const Meta* m = meta();
  return m == nullptr ? 0 : m->root;
}

std::string_view WbTreeEngine::block_key(std::uint64_t key_block) const noexcept {
  const auto* p = at<unsigned char>(key_block);
  return {reinterpret_cast<const char*>(p + 1), p[0]};
}

std::string_view WbTreeEngine::entry_key(std::uint64_t node, unsigned entry) const {
  if (is_leaf(node)) return key_of(ref_at(node, entry));
  const std::uint64_t key_block = inner(node)->entries[entry].key_block;
  return key_block == 0 ? std::string_view{} : block_key(key_block);
}

unsigned WbTreeEngine::child_pos(std::uint64_t node, std::string_view key) const {
  const NodeHeader* h = header(node);
  const Inner* n = inner(node);
  // The last position whose key is <= key; position 0 is -infinity, so the search is over
  // [1, count): integer heads, a key block only on a tie (wbtree_node.h).
  return btree::upper_bound(
             n->prefix, key, 1, h->count, [&](unsigned pos) { return n->heads[h->order[pos]]; },
             [&](unsigned pos) { return block_key(n->entries[h->order[pos]].key_block); }) -
         1;
}

void WbTreeEngine::refresh_heads(std::uint64_t node) noexcept {
  Inner* n = inner(node);
  const NodeHeader* h = &n->header;
  btree::refresh_heads(
      n->prefix, 1, h->count,
      [&](unsigned pos) { return block_key(n->entries[h->order[pos]].key_block); },
      [&](unsigned pos, std::uint32_t head) { n->heads[h->order[pos]] = head; });
}

void WbTreeEngine::note_head(std::uint64_t node, unsigned entry) noexcept {
  Inner* n = inner(node);
  const std::string_view key = block_key(n->entries[entry].key_block);
  if (n->prefix.shrink_to(key)) {
    refresh_heads(node);  // a shorter prefix: every head moves
  } else {
    n->heads[entry] = btree::head_after(key, n->prefix.len);
  }
}

unsigned WbTreeEngine::lower_bound(std::uint64_t node, std::string_view key) const {
  const NodeHeader* h = header(node);
  const Leaf* n = leaf(node);
  unsigned lo = 0, hi = h->count;
  while (lo < hi) {
    const unsigned mid = (lo + hi) / 2;
    if (key_of(btree::ref_of(n->entries[h->order[mid]])) < key) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

unsigned WbTreeEngine::find_entry(std::uint64_t node, std::string_view key,
                                  std::uint64_t tag) const {
  const Leaf* n = leaf(node);
  // The tag compare over all entries, branch-free (a bitmap of the matches), then the keys of the
  // in-use matching entries.
  std::uint64_t matches = 0;
  for (unsigned e = 0; e < kLeafFanout; ++e) {
    matches |= std::uint64_t{btree::tag_of(n->entries[e]) == tag} << (e + 1);
  }
  for (matches &= n->header.bitmap; matches != 0; matches &= matches - 1) {
    const auto entry = static_cast<unsigned>(__builtin_ctzll(matches) - 1);
    if (key_of(ref_at(node, entry)) == key) return entry;
  }
  return kLeafFanout;
}

unsigned WbTreeEngine::position_of(std::uint64_t node, unsigned entry) const noexcept {
  const NodeHeader* h = header(node);
  unsigned pos = 0;
  while (pos < h->count && h->order[pos] != entry) ++pos;
  return pos;
}

std::uint64_t WbTreeEngine::find_leaf(std::string_view key, std::vector<Step>* path) const {
  std::uint64_t node = root();
  while (node != 0 && !is_leaf(node)) {
    const unsigned pos = child_pos(node, key);
    if (path != nullptr) path->push_back({node, pos});
    node = child_at(node, pos);
  }
  return node;
}

ItemRef WbTreeEngine::lookup(std::string_view key) const noexcept {
  std::shared_lock lock(mutex_);
  const std::uint64_t node = find_leaf(key, nullptr);
  if (node == 0) return kNoItem;
  const unsigned entry = find_entry(node, key, btree::key_tag(key));
  return entry == kLeafFanout ? kNoItem : ref_at(node, entry);
}

void WbTreeEngine::scan(std::string_view from,
                        const std::function<bool(std::string_view key, ItemRef ref)>& visit) const {
  std::shared_lock lock(mutex_);
  if (root() != 0) scan_node(root(), from, visit);
}

bool WbTreeEngine::scan_node(
    std::uint64_t node, std::string_view from,
    const std::function<bool(std::string_view key, ItemRef ref)>& visit) const {
  const NodeHeader* h = header(node);
  if (is_leaf(node)) {
    for (unsigned pos = lower_bound(node, from); pos < h->count; ++pos) {
      const ItemRef ref = ref_at(node, h->order[pos]);
      if (!visit(key_of(ref), ref)) return false;
    }
    return true;
  }
  for (unsigned pos = child_pos(node, from); pos < h->count; ++pos) {
    if (!scan_node(child_at(node, pos), from, visit)) return false;
  }
  return true;
}

std::uint64_t WbTreeEngine::new_key_block(std::string_view key) noexcept {
  const std::uint64_t offset = allocate_node(1 + key.size());
  if (offset == 0) return 0;
  auto* p = at<unsigned char>(offset);
  p[0] = static_cast<unsigned char>(key.size());
  std::memcpy(p + 1, key.data(), key.size());
  flush_new_node(offset, 1 + key.size());
  return offset;
}

void WbTreeEngine::free_node(std::uint64_t node) noexcept {
  if (!is_leaf(node)) {
    const NodeHeader* h = header(node);
    for (unsigned pos = 0; pos < h->count; ++pos) {
      const std::uint64_t key_block = inner(node)->entries[h->order[pos]].key_block;
      if (key_block != 0) allocator_->free(key_block);
    }
  }
  allocator_->free(node);
}

std::size_t WbTreeEngine::height() const noexcept {
  std::size_t levels = 0;
  for (std::uint64_t node = root(); node != 0; node = is_leaf(node) ? 0 : child_at(node, 0)) {
    ++levels;
  }
  return levels;
}

void WbTreeEngine::walk(
    const std::function<void(std::uint64_t offset, BlockType type)>& visit) const {
  std::vector<std::uint64_t> stack;
  if (root() != 0) stack.push_back(root());
  while (!stack.empty()) {
    const std::uint64_t node = stack.back();
    stack.pop_back();
    if (is_leaf(node)) {
      visit(node, BlockType::kLeaf);
      continue;
    }
    visit(node, BlockType::kInner);
    const NodeHeader* h = header(node);
    for (unsigned pos = h->count; pos-- > 0;) {  // reversed: children pop in key order
      const InnerEntry& e = inner(node)->entries[h->order[pos]];
      if (e.key_block != 0) visit(e.key_block, BlockType::kKey);
      stack.push_back(e.child);
    }
  }
}

void WbTreeEngine::visit_blocks(const std::function<void(std::uint64_t offset)>& visit) const {
  walk([&](std::uint64_t offset, BlockType) { visit(offset); });
}

btree::TreeFigures WbTreeEngine::figures() const {
  std::uint64_t counts[3] = {0, 0, 0};
  btree::TreeFigures f;
  if (pool_->root() != 0) f.node_bytes += allocator_->block_size(pool_->root());
  walk([&](std::uint64_t offset, BlockType type) {
    f.node_bytes += allocator_->block_size(offset);
    ++counts[static_cast<unsigned>(type)];
  });
  f.nodes_by_type = {{"leaf", counts[0]}, {"inner", counts[1]}, {"key", counts[2]}};
  f.leaf_depth_sum = static_cast<std::uint64_t>(size()) * height();
  return f;
}

void WbTreeEngine::extra_stats(std::vector<EngineStat>& out) const {
  out.push_back({"leaf_splits", std::to_string(leaf_splits_.load(std::memory_order_relaxed))});
  out.push_back({"inner_splits", std::to_string(inner_splits_.load(std::memory_order_relaxed))});
  out.push_back({"root_splits", std::to_string(root_splits_.load(std::memory_order_relaxed))});
  out.push_back({"log_replays", std::to_string(log_replays_.load(std::memory_order_relaxed))});
}

}  // namespace wbtree

std::unique_ptr<IndexEngine> make_wbtree_engine(const EngineContext& context) {
  return std::make_unique<wbtree::WbTreeEngine>(context);
}

}  // namespace pmcached::engine

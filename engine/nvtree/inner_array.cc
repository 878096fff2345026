// InnerArray: the NV-Tree's DRAM inner nodes in one array. See inner_array.h.
#include "engine/nvtree/inner_array.h"

#include <algorithm>
#include <utility>

namespace pmcached::engine::nvtree {
namespace {

// The child (IN) or leaf (PLN) of `n` whose range holds `key`: the number of keys[1..n-1] <= key.
template <typename Node>
unsigned route(const Node& node, std::string_view key) noexcept {
  const unsigned last = std::max<std::uint32_t>(node.n, 1);
  return btree::upper_bound(
             node.prefix, key, 1, last, [&](unsigned c) { return node.heads[c]; },
             [&](unsigned c) { return std::string_view(node.keys[c]); }) -
         1;
}

}  // namespace

void InnerArray::refresh_heads(Node& node) noexcept {
  btree::refresh_heads(
      node.prefix, 1, std::max<std::uint32_t>(node.n, 1),
      [&](unsigned c) { return std::string_view(node.keys[c]); },
      [&](unsigned c, std::uint32_t head) { node.heads[c] = head; });
}

void InnerArray::build(std::vector<Entry> list) {
  nodes_.clear();
  level_begin_.clear();
  leaf_count_ = list.size();
  if (list.empty()) return;

  // Level sizes from the PLNs up; then the levels are laid out root first.
  const std::size_t plns = (list.size() + kPlnFill - 1) / kPlnFill;
  std::vector<std::size_t> counts = {plns};
  while (counts.back() > 1) counts.push_back((counts.back() + kSlots - 1) / kSlots);
  std::reverse(counts.begin(), counts.end());
  std::size_t total = 0;
  for (std::size_t c : counts) {
    level_begin_.push_back(total);
    total += c;
  }
  nodes_.resize(total);

  // PLNs: the leaves spread evenly, at most kPlnFill each.
  const std::size_t base = list.size() / plns;
  const std::size_t extra = list.size() % plns;
  std::size_t next = 0;
  for (std::size_t p = 0; p < plns; ++p) {
    Node& node = nodes_[pln_level_begin() + p];
    node.n = static_cast<std::uint32_t>(base + (p < extra ? 1 : 0));
    for (std::uint32_t i = 0; i < node.n; ++i, ++next) {
      node.keys[i] = std::move(list[next].bound);
      node.leaves[i] = list[next].leaf;
    }
    refresh_heads(node);
  }
  // INs, bottom-up: child c's lowest key is the child's keys[0].
  for (std::size_t l = counts.size() - 1; l-- > 0;) {
    for (std::size_t j = 0; j < counts[l]; ++j) {
      Node& node = nodes_[level_begin_[l] + j];
      const std::size_t first = j * kSlots;
      const std::size_t children = std::min<std::size_t>(kSlots, counts[l + 1] - first);
      node.n = static_cast<std::uint32_t>(children);
      for (std::size_t c = 0; c < children; ++c) {
        node.keys[c] = nodes_[level_begin_[l + 1] + first + c].keys[0];
      }
      refresh_heads(node);
    }
  }
}

std::size_t InnerArray::bytes() const noexcept {
  static const std::size_t kInline = std::string().capacity();
  std::size_t total = nodes_.capacity() * sizeof(Node);
  for (const Node& node : nodes_) {
    for (const std::string& k : node.keys) {
      if (k.capacity() > kInline) total += k.capacity() + 1;
    }
  }
  return total;
}

InnerArray::Position InnerArray::locate(std::string_view key) const noexcept {
  std::size_t index = 0;
  for (std::size_t l = 0; l + 1 < level_begin_.size(); ++l) {
    index = index * kSlots + route(nodes_[level_begin_[l] + index], key);
  }
  return {static_cast<std::uint32_t>(index), route(nodes_[pln_level_begin() + index], key)};
}

std::uint64_t InnerArray::predecessor(Position p) const noexcept {
  if (p.slot > 0) return pln(p).leaves[p.slot - 1];
  if (p.pln == 0) return 0;
  const Node& before = nodes_[pln_level_begin() + p.pln - 1];
  return before.leaves[before.n - 1];
}

bool InnerArray::insert_after(Position p, std::string_view bound, std::uint64_t leaf) {
  Node& node = pln(p);
  if (node.n < kSlots) {
    for (std::uint32_t i = node.n; i > p.slot + 1; --i) {
      node.keys[i] = std::move(node.keys[i - 1]);
      node.leaves[i] = node.leaves[i - 1];
    }
    node.keys[p.slot + 1] = bound;
    node.leaves[p.slot + 1] = leaf;
    ++node.n;
    ++leaf_count_;
    refresh_heads(node);
    return false;
  }
  // The PLN is full: rebuild every node from the flat list with the new leaf in it.
  std::size_t at = p.slot + 1;
  for (std::uint32_t q = 0; q < p.pln; ++q) at += nodes_[pln_level_begin() + q].n;
  std::vector<Entry> list = entries();
  list.insert(list.begin() + static_cast<std::ptrdiff_t>(at), Entry{std::string(bound), leaf});
  build(std::move(list));
  return true;
}

bool InnerArray::remove(Position p) {
  Node& node = pln(p);
  if (node.n > 1) {
    for (std::uint32_t i = p.slot; i + 1 < node.n; ++i) node.leaves[i] = node.leaves[i + 1];
    // Slot 0 keeps the PLN's bound in keys[0]: the next leaf's bound goes instead.
    for (std::uint32_t i = std::max<std::uint32_t>(p.slot, 1); i + 1 < node.n; ++i) {
      node.keys[i] = std::move(node.keys[i + 1]);
    }
    --node.n;
    node.keys[node.n].clear();
    node.leaves[node.n] = 0;
    --leaf_count_;
    refresh_heads(node);
    return false;
  }
  // The PLN's only leaf: rebuild without it (its range goes to the leaf before it).
  std::size_t at = 0;
  for (std::uint32_t q = 0; q < p.pln; ++q) at += nodes_[pln_level_begin() + q].n;
  std::vector<Entry> list = entries();
  list.erase(list.begin() + static_cast<std::ptrdiff_t>(at));
  if (!list.empty()) list.front().bound.clear();
  build(std::move(list));
  return true;
}

std::vector<InnerArray::Entry> InnerArray::entries() const {
  std::vector<Entry> list;
  list.reserve(leaf_count_);
  if (level_begin_.empty()) return list;
  for (std::size_t q = pln_level_begin(); q < nodes_.size(); ++q) {
    for (std::uint32_t i = 0; i < nodes_[q].n; ++i) {
      list.push_back({nodes_[q].keys[i], nodes_[q].leaves[i]});
    }
  }
  return list;
}

}  // namespace pmcached::engine::nvtree

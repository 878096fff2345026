// BTree: erase, merges and rebalancing on underflow, root collapse.
#include <cstring>

#include "engine/bptree/btree.h"
#include "engine/bptree/btree_internal.h"
#include "engine/bptree/separator.h"

namespace pmcached::engine::bptree {
namespace {

// A page below a quarter full merges with a sibling or borrows from it.
constexpr std::size_t underflow_limit(std::size_t page_size) noexcept {
  return node_capacity(page_size) / 4;
}

}  // namespace

bool BTree::erase(MiniTransaction& txn, std::string_view key) {
  const int result = erase_optimistic(txn, key);
  if (result >= 0) return result == 1;
  pessimistic_.fetch_add(1, std::memory_order_relaxed);
  return erase_pessimistic(txn, key);
}

// 1: erased, 0: absent, -1: the leaf would underflow (descend again exclusively).
int BTree::erase_optimistic(MiniTransaction& txn, std::string_view key) {
  WriteContext w(txn);
  Held leaf(descend(key, LatchMode::kExclusive));
  const Node node = leaf.node(page_size_);
  const SearchResult r = node.search(key);
  if (!r.found) return 0;
  // Stable while the leaf is latched: the root changes only under the old root's latch, and a
  // page becomes the root only under its own.
  const bool is_root = leaf.id == root_.load(std::memory_order_acquire);
  if (!is_root && node.used() - node.entry_bytes(r.index) < underflow_limit(page_size_)) return -1;

  std::byte old_ref[kOverflowRefSize];
  const bool old_big = (node.flags(r.index) & kOverflowRecord) != 0;
  if (old_big) std::memcpy(old_ref, node.payload(r.index).data(), kOverflowRefSize);
  NodeWriter(modify(w, leaf)).erase(r.index);
  if (old_big) free_overflow(w, old_ref);
  add_items(w, -1);
  return 1;
}

bool BTree::erase_pessimistic(MiniTransaction& txn, std::string_view key) {
  WriteContext w(txn);
  w.path.emplace_back(hold_exclusive(fix_root(LatchMode::kExclusive, LatchMode::kExclusive)));
  w.siblings.emplace_back();
  w.sibling_left.push_back(false);
  w.top_is_root = true;
  while (w.path.back().node(page_size_).is_inner()) {
    Held& parent = w.path.back();
    const Node node = parent.node(page_size_);
    const std::size_t j = node.child_index(key);
    parent.index = j;
    auto slot = [&](std::size_t i) {
      return reinterpret_cast<std::uint64_t*>(parent.data + node.child_offset(i));
    };
    // The sibling a merge would use, latched in key order with the child.
    const bool has_sibling = node.count() > 0;
    const bool left = j == node.count();
    Held child;
    Held sibling;
    if (has_sibling && left) {
      sibling = Held(
          hold_exclusive(buffers_.fix_child(parent.guard, slot(j - 1), LatchMode::kExclusive)));
      child =
          Held(hold_exclusive(buffers_.fix_child(parent.guard, slot(j), LatchMode::kExclusive)));
    } else {
      child =
          Held(hold_exclusive(buffers_.fix_child(parent.guard, slot(j), LatchMode::kExclusive)));
      if (has_sibling) {
        sibling = Held(
            hold_exclusive(buffers_.fix_child(parent.guard, slot(j + 1), LatchMode::kExclusive)));
      }
    }
    const Node c = child.node(page_size_);
    bool safe;
    if (c.is_inner()) {
      safe = c.used() >= underflow_limit(page_size_) + kMaxInnerEntry;
    } else {
      const SearchResult r = c.search(key);
      safe = !r.found || c.used() - c.entry_bytes(r.index) >= underflow_limit(page_size_);
    }
    if (safe) {  // no merge reaches above `child`
      w.path.clear();
      w.siblings.clear();
      w.sibling_left.clear();
      w.top_is_root = false;
      sibling = Held();
    }
    w.path.push_back(std::move(child));
    w.siblings.push_back(std::move(sibling));
    w.sibling_left.push_back(left);
  }

  Held& leaf = w.path.back();
  const Node node = leaf.node(page_size_);
  const SearchResult r = node.search(key);
  if (!r.found) return false;
  std::byte old_ref[kOverflowRefSize];
  const bool old_big = (node.flags(r.index) & kOverflowRecord) != 0;
  if (old_big) std::memcpy(old_ref, node.payload(r.index).data(), kOverflowRefSize);
  NodeWriter(modify(w, leaf)).erase(r.index);

  for (std::size_t level = w.path.size() - 1; level > 0; --level) {
    if (w.path[level].node(page_size_).used() >= underflow_limit(page_size_)) break;
    rebalance(w, level);
  }
  if (w.top_is_root) {
    const Node root = w.path.front().node(page_size_);
    if (root.is_inner() && root.count() == 0) collapse_root(w);
  }
  if (old_big) free_overflow(w, old_ref);
  add_items(w, -1);
  return true;
}

void BTree::rebalance(WriteContext& w, std::size_t level) {
  Held& sibling = w.siblings[level];
  if (!sibling) return;  // an only child: its parent underflows too and is handled above
  Held& parent = w.path[level - 1];
  Held& node = w.path[level];
  const bool sibling_left = w.sibling_left[level];
  Held& left = sibling_left ? sibling : node;
  Held& right = sibling_left ? node : sibling;
  const std::size_t jl = sibling_left ? parent.index - 1 : parent.index;

  PageChanges& pc = modify(w, parent);
  PageChanges& lc = modify(w, left);
  PageChanges& rc = modify(w, right);
  const Node pn(pc.page(), page_size_);
  const Node ln(lc.page(), page_size_);
  const Node rn(rc.page(), page_size_);
  const bool inner = ln.is_inner();
  const NodeKind kind = ln.kind();
  const unsigned node_level = ln.level();

  // Both pages' entries in key order; inner pages pull the parent's separator down between them.
  std::vector<Entry> entries = entries_of(ln);
  const std::string parent_sep(pn.key(jl));
  const PageId left_upper = ln.link();
  if (inner) entries.push_back(Entry{parent_sep, child_bytes(left_upper), 0});
  const std::vector<Entry> right_entries = entries_of(rn);
  entries.insert(entries.end(), right_entries.begin(), right_entries.end());
  std::vector<std::size_t> sizes;
  std::size_t total = 0;
  for (const Entry& e : entries) {
    sizes.push_back(entry_size(inner, e.key.size(), e.payload.size()));
    total += sizes.back();
  }

  const std::size_t capacity = node_capacity(page_size_);
  const std::span<const Entry> all(entries);
  ScratchPage left_page(page_size_);
  if (total <= capacity) {  // merge: the left page takes everything, the right one is freed
    build_node(left_page, kind, node_level, all, rn.link(), b2_threshold_);
    install_node(lc, left_page);
    NodeWriter p(pc);
    p.set_child(jl + 1, left.id);
    p.erase(jl);
    free_page(w, rc);
    merges_.fetch_add(1, std::memory_order_relaxed);
    return;
  }

  // Borrow: spread the entries evenly, with a new separator in the parent.
  const std::size_t k = choose_split(sizes, capacity, inner, [&](std::size_t i) {
    return inner ? entries[i].key.size()
                 : shortest_separator(entries[i - 1].key, entries[i].key).size();
  });
  if (k == 0) return;
  const std::string sep(inner ? entries[k].key
                              : shortest_separator(entries[k - 1].key, entries[k].key));
  // The parent must hold the new separator instead of the old one (rarely longer; if it does
  // not fit, the underflow stays: a performance matter, not a correctness one).
  if (entry_size(true, sep.size(), 8) > pn.free_total() + pn.entry_bytes(jl)) return;
  ScratchPage right_page(page_size_);
  if (inner) {
    build_node(left_page, kind, node_level, all.first(k),
               load_value<std::uint64_t>(entries[k].payload.data()), b2_threshold_);
    build_node(right_page, kind, node_level, all.subspan(k + 1), rn.link(), b2_threshold_);
  } else {
    build_node(left_page, kind, node_level, all.first(k), right.id, b2_threshold_);
    build_node(right_page, kind, node_level, all.subspan(k), rn.link(), b2_threshold_);
  }
  install_node(lc, left_page);
  install_node(rc, right_page);
  NodeWriter p(pc);
  p.erase(jl);
  must(p.insert(jl, sep, child_bytes(left.id)), "a borrow's separator");
  borrows_.fetch_add(1, std::memory_order_relaxed);
}

void BTree::collapse_root(WriteContext& w) {
  Held& root = w.path.front();
  PageChanges& changes = modify(w, root);
  const Node node(changes.page(), page_size_);
  const PageId child = node.link();
  const unsigned level = node.level() - 1;
  PageChanges& meta = meta_changes(w);
  MetaPage::set(meta, MetaPage::kRoot, child);
  MetaPage::set(meta, MetaPage::kRootLevel, level);
  set_root(child, level);  // under the old root's exclusive latch
  free_page(w, changes);
}

}  // namespace pmcached::engine::bptree

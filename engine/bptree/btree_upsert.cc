// BTree: upsert, leaf and inner splits, root growth.
#include <cassert>
#include <cstring>

#include "engine/bptree/btree.h"
#include "engine/bptree/btree_internal.h"
#include "engine/bptree/separator.h"

namespace pmcached::engine::bptree {
namespace {

struct Placement {
  SearchResult at;
  bool big;           // the record goes to an overflow chain
  std::size_t need;   // bytes the new entry takes in the leaf
  std::size_t room;   // bytes the leaf has for it (the old entry's included)
  std::size_t pages;  // overflow pages to allocate
  bool old_big;       // the replaced record had a chain
};

Placement place(const Node& leaf, std::string_view key, std::size_t record_size,
                std::size_t page_size) {
  Placement p{};
  p.at = leaf.search(key);
  p.big = record_size > max_inline_payload(page_size);
  p.need = entry_size(false, key.size(), p.big ? kOverflowRefSize : record_size);
  p.room = leaf.free_total() + (p.at.found ? leaf.entry_bytes(p.at.index) : 0);
  p.pages = p.big ? overflow_pages(record_size, page_size) : 0;
  p.old_big = p.at.found && (leaf.flags(p.at.index) & kOverflowRecord) != 0;
  return p;
}

std::vector<std::size_t> sizes_of(std::span<const Entry> entries, bool inner) {
  std::vector<std::size_t> sizes;
  sizes.reserve(entries.size());
  for (const Entry& e : entries) sizes.push_back(entry_size(inner, e.key.size(), e.payload.size()));
  return sizes;
}

}  // namespace

WriteStatus BTree::upsert(MiniTransaction& txn, std::string_view key,
                          std::span<const std::byte> record) {
  assert(!key.empty() && key.size() <= kMaxKeySize);
  bool done = false;
  const WriteStatus status = upsert_optimistic(txn, key, record, done);
  if (done) return status;
  pessimistic_.fetch_add(1, std::memory_order_relaxed);
  return upsert_pessimistic(txn, key, record);
}

WriteStatus BTree::upsert_optimistic(MiniTransaction& txn, std::string_view key,
                                     std::span<const std::byte> record, bool& done) {
  WriteContext w(txn);
  Held leaf(descend(key, LatchMode::kExclusive));
  const Placement p = place(leaf.node(page_size_), key, record.size(), page_size_);
  if (p.need > p.room) return WriteStatus::kFull;  // a split: done stays false
  done = true;
  if (!reserve(w, p.pages)) return WriteStatus::kFull;

  std::byte ref[kOverflowRefSize];
  std::byte old_ref[kOverflowRefSize];
  std::span<const std::byte> payload = record;
  std::uint16_t flags = 0;
  // Allocate before freeing: a page freed by this write is never handed out again in it.
  if (p.big) {
    write_overflow(w, record, ref);
    payload = ref;
    flags = kOverflowRecord;
  }
  NodeWriter node(modify(w, leaf));
  if (p.old_big) std::memcpy(old_ref, node.payload(p.at.index).data(), kOverflowRefSize);
  if (p.at.found) {
    must(node.replace_payload(p.at.index, payload, flags), "a replaced record");
    if (p.old_big) free_overflow(w, old_ref);
    return WriteStatus::kReplaced;
  }
  must(node.insert(p.at.index, key, payload, flags), "an inserted record");
  add_items(w, 1);
  return WriteStatus::kInserted;
}

WriteStatus BTree::upsert_pessimistic(MiniTransaction& txn, std::string_view key,
                                      std::span<const std::byte> record) {
  WriteContext w(txn);
  w.path.emplace_back(hold_exclusive(fix_root(LatchMode::kExclusive, LatchMode::kExclusive)));
  w.path.back().leftmost = w.path.back().rightmost = true;
  w.top_is_root = true;
  while (w.path.back().node(page_size_).is_inner()) {
    Held& parent = w.path.back();
    const Node node = parent.node(page_size_);
    parent.index = node.child_index(key);
    auto* slot = reinterpret_cast<std::uint64_t*>(parent.data + node.child_offset(parent.index));
    Held child(hold_exclusive(buffers_.fix_child(parent.guard, slot, LatchMode::kExclusive)));
    child.leftmost = parent.leftmost && parent.index == 0;
    child.rightmost = parent.rightmost && parent.index == node.count();
    const Node c = child.node(page_size_);
    bool safe;
    if (c.is_inner()) {
      safe = c.free_total() >= kMaxInnerEntry;
    } else {
      const Placement p = place(c, key, record.size(), page_size_);
      safe = p.need <= p.room;
    }
    if (safe) {  // no split reaches above `child`: let the ancestors go
      w.path.clear();
      w.top_is_root = false;
    }
    w.path.push_back(std::move(child));
  }

  Held& leaf = w.path.back();
  const Placement p = place(leaf.node(page_size_), key, record.size(), page_size_);
  const bool split = p.need > p.room;
  // Each page of the path may split once, and the root may grow.
  const std::size_t split_pages = split ? w.path.size() + (w.top_is_root ? 1 : 0) : 0;
  if (!reserve(w, p.pages + split_pages)) return WriteStatus::kFull;

  std::byte ref[kOverflowRefSize];
  std::byte old_ref[kOverflowRefSize];
  std::span<const std::byte> payload = record;
  std::uint16_t flags = 0;
  if (p.big) {
    write_overflow(w, record, ref);
    payload = ref;
    flags = kOverflowRecord;
  }
  if (p.old_big) {
    std::memcpy(old_ref, leaf.node(page_size_).payload(p.at.index).data(), kOverflowRefSize);
  }
  if (split) {
    split_leaf(w, key, payload, flags);
  } else {
    NodeWriter node(modify(w, leaf));
    must(p.at.found ? node.replace_payload(p.at.index, payload, flags)
                    : node.insert(p.at.index, key, payload, flags),
         "a written record");
  }
  if (p.old_big) free_overflow(w, old_ref);
  if (p.at.found) return WriteStatus::kReplaced;
  add_items(w, 1);
  return WriteStatus::kInserted;
}

void BTree::split_leaf(WriteContext& w, std::string_view key, std::span<const std::byte> payload,
                       std::uint16_t flags) {
  const std::size_t level = w.path.size() - 1;
  Held& leaf = w.path[level];
  PageChanges& left = modify(w, leaf);
  const Node node(left.page(), page_size_);
  const SearchResult r = node.search(key);
  // The descent's view of the edge agrees with the sibling link (both stable under the latch).
  assert(leaf.rightmost == (node.link() == 0));
  std::vector<Entry> entries = entries_of(node);
  const Entry entry{key, payload, flags};
  if (r.found) {
    entries[r.index] = entry;
  } else {
    entries.insert(entries.begin() + static_cast<std::ptrdiff_t>(r.index), entry);
  }
  const std::vector<std::size_t> sizes = sizes_of(entries, false);
  const SplitAt at = split_direction(leaf.leftmost, leaf.rightmost, r.index, entries.size());
  const std::size_t k = choose_split(
      sizes, node_capacity(page_size_), false,
      [&](std::size_t i) { return shortest_separator(entries[i - 1].key, entries[i].key).size(); },
      at);
  assert(k != 0);
  const std::string sep(shortest_separator(entries[k - 1].key, entries[k].key));

  PageChanges& right = allocate(w);
  ScratchPage left_page(page_size_);
  ScratchPage right_page(page_size_);
  const std::span<const Entry> all(entries);
  build_node(left_page, NodeKind::kLeaf, 0, all.first(k), right.id(), b2_threshold_);
  build_node(right_page, NodeKind::kLeaf, 0, all.subspan(k), node.link(), b2_threshold_);
  install_node(left, left_page);
  install_node(right, right_page);
  splits_.fetch_add(1, std::memory_order_relaxed);
  if (at != SplitAt::kMiddle) edge_splits_.fetch_add(1, std::memory_order_relaxed);

  if (level == 0) {
    assert(w.top_is_root);
    grow_root(w, sep, leaf.id, right.id(), 0);
  } else {
    insert_separator(w, level - 1, w.path[level - 1].index, sep, leaf.id, right.id());
  }
}

void BTree::insert_separator(WriteContext& w, std::size_t level, std::size_t j,
                             std::string_view sep, PageId left, PageId right) {
  Held& held = w.path[level];
  PageChanges& changes = modify(w, held);
  NodeWriter node(changes);
  if (node.fits(entry_size(true, sep.size(), 8))) {
    node.set_child(j, right);
    node.insert(j, sep, child_bytes(left));
    return;
  }
  // Split the inner page; the entries are built with the change applied.
  std::vector<Entry> entries = entries_of(node);
  PageId upper = node.link();
  if (j == node.count()) {
    upper = right;
  } else {
    entries[j].payload = child_bytes(right);
  }
  entries.insert(entries.begin() + static_cast<std::ptrdiff_t>(j),
                 Entry{sep, child_bytes(left), 0});
  const std::vector<std::size_t> sizes = sizes_of(entries, true);
  const SplitAt at = split_direction(held.leftmost, held.rightmost, j, entries.size());
  const std::size_t k = choose_split(
      sizes, node_capacity(page_size_), true, [&](std::size_t i) { return entries[i].key.size(); },
      at);
  assert(k != 0);
  const std::string up(entries[k].key);
  const PageId left_upper = load_value<std::uint64_t>(entries[k].payload.data());
  const unsigned node_level = node.level();

  PageChanges& new_right = allocate(w);
  ScratchPage left_page(page_size_);
  ScratchPage right_page(page_size_);
  const std::span<const Entry> all(entries);
  build_node(left_page, NodeKind::kInner, node_level, all.first(k), left_upper, b2_threshold_);
  build_node(right_page, NodeKind::kInner, node_level, all.subspan(k + 1), upper, b2_threshold_);
  install_node(changes, left_page);
  install_node(new_right, right_page);
  splits_.fetch_add(1, std::memory_order_relaxed);
  if (at != SplitAt::kMiddle) edge_splits_.fetch_add(1, std::memory_order_relaxed);

  if (level == 0) {
    assert(w.top_is_root);
    grow_root(w, up, held.id, new_right.id(), node_level);
  } else {
    insert_separator(w, level - 1, w.path[level - 1].index, up, held.id, new_right.id());
  }
}

void BTree::grow_root(WriteContext& w, std::string_view sep, PageId left, PageId right,
                      unsigned child_level) {
  PageChanges& root = allocate(w);
  ScratchPage page(page_size_);
  const Entry entry{sep, child_bytes(left), 0};
  build_node(page, NodeKind::kInner, child_level + 1, std::span(&entry, 1), right, b2_threshold_);
  install_node(root, page);
  PageChanges& meta = meta_changes(w);
  MetaPage::set(meta, MetaPage::kRoot, root.id());
  MetaPage::set(meta, MetaPage::kRootLevel, child_level + 1);
  // Still under the old root's exclusive latch: a reader holding the old id will notice.
  set_root(root.id(), child_level + 1);
  root_splits_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace pmcached::engine::bptree

// BTree: page allocation and freeing through the meta page, overflow chains, node building, and
// patch.
#include <algorithm>
#include <cstring>

#include "engine/bptree/btree.h"
#include "engine/bptree/btree_internal.h"
#include "engine/buffer/page_file.h"

namespace pmcached::engine::bptree {

void build_node(ScratchPage& scratch, NodeKind kind, unsigned level, std::span<const Entry> entries,
                std::uint64_t link, unsigned b2_threshold) {
  std::memset(scratch.data(), 0, scratch.size());
  PageChanges changes(buffer::kNoPage, scratch.data(), scratch.size());
  NodeWriter node(changes);
  node.init(kind, level);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    must(node.insert(i, entries[i].key, entries[i].payload, entries[i].flags),
         "a built node's entry");
  }
  node.set_link(link);
  node.enable_tree(b2_threshold);  // built once over all the entries
}

void install_node(PageChanges& page, ScratchPage& scratch) {
  page.write(kKindOffset, scratch.data() + kKindOffset, scratch.size() - kKindOffset);
  page.mark_whole();
}

std::vector<Entry> entries_of(const Node& node) {
  std::vector<Entry> entries;
  entries.reserve(node.count() + 2);
  for (std::size_t i = 0; i < node.count(); ++i) {
    entries.push_back(Entry{node.key(i), node.payload(i), node.flags(i)});
  }
  return entries;
}

PageChanges& BTree::modify(WriteContext& w, Held& held) {
  if (held.changes == nullptr) {
    // A tagged (swizzled) reference must never move, nor reach the log or the file.
    if (held.node(page_size_).is_inner()) buffers_.unswizzle_children(held.guard);
    held.changes = &w.txn.track(std::move(held.guard));
  }
  return *held.changes;
}

PageChanges& BTree::meta_changes(WriteContext& w) {
  if (w.meta == nullptr) {
    w.meta = w.txn.find(kMetaPage);
    if (w.meta == nullptr) w.meta = &w.txn.track(buffers_.fix(kMetaPage, LatchMode::kExclusive));
  }
  return *w.meta;
}

bool BTree::reserve(WriteContext& w, std::size_t pages) {
  if (pages == 0) return true;
  const MetaFields f = MetaPage::read(meta_changes(w).page());
  const PageId max_pages = buffers_.file().max_pages();
  const std::uint64_t room =
      f.stack_size + f.free_count + (max_pages > f.high_water ? max_pages - f.high_water : 0);
  return pages <= room;
}

PageChanges& BTree::allocate(WriteContext& w) {
  PageChanges& meta = meta_changes(w);
  const MetaFields f = MetaPage::read(meta.page());
  PageId id;
  if (f.stack_size > 0) {
    id = MetaPage::stack_entry(meta.page(), f.stack_size - 1);
    MetaPage::set(meta, MetaPage::kStackSize, f.stack_size - 1);
    if (PageChanges* held = w.txn.find(id)) {
      // Freed earlier in this write (writes avoid it: they allocate before they free).
      held->fill(kKindOffset, std::byte{0}, page_size_ - kKindOffset);
      held->mark_whole();
      return *held;
    }
  } else if (f.free_head != buffer::kNoPage) {
    id = f.free_head;
    PageId next;
    {
      // A page of a freed overflow chain: nothing latches it but the meta page's holder.
      const PageGuard page = buffers_.fix(id, LatchMode::kShared);
      next = Node(page.data(), page_size_).link();
    }
    MetaPage::set(meta, MetaPage::kFreeHead, next);
    MetaPage::set(meta, MetaPage::kFreeCount, f.free_count - 1);
  } else {
    id = f.high_water;
    MetaPage::set(meta, MetaPage::kHighWater, id + 1);
  }
  return w.txn.track_new(buffers_.fix_new(id));
}

void BTree::free_page(WriteContext& w, PageChanges& page) {
  PageChanges& meta = meta_changes(w);
  const MetaFields f = MetaPage::read(meta.page());
  NodeWriter node(page);
  node.init(NodeKind::kFree, 0);
  if (f.stack_size < MetaPage::stack_capacity(page_size_)) {
    MetaPage::set_stack_entry(meta, f.stack_size, page.id());
    MetaPage::set(meta, MetaPage::kStackSize, f.stack_size + 1);
    return;
  }
  node.set_link(f.free_head);
  MetaPage::set(meta, MetaPage::kFreeHead, page.id());
  MetaPage::set(meta, MetaPage::kFreeCount, f.free_count + 1);
}

void BTree::add_items(WriteContext& w, std::int64_t delta) {
  PageChanges& meta = meta_changes(w);
  const std::uint64_t items = MetaPage::read(meta.page()).items + static_cast<std::uint64_t>(delta);
  MetaPage::set(meta, MetaPage::kItems, items);
  items_.store(items, std::memory_order_relaxed);
}

void BTree::write_overflow(WriteContext& w, std::span<const std::byte> record, std::byte* ref) {
  const std::size_t n = overflow_pages(record.size(), page_size_);
  std::vector<PageChanges*> pages;
  pages.reserve(n);
  for (std::size_t i = 0; i < n; ++i) pages.push_back(&allocate(w));
  const std::size_t capacity = overflow_capacity(page_size_);
  std::size_t at = kOverflowPrefix;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t k = std::min(capacity, record.size() - at);
    const PageId next = i + 1 < n ? pages[i + 1]->id() : buffer::kNoPage;
    write_overflow_page(*pages[i], next, record.subspan(at, k));
    at += k;
  }
  encode_overflow_ref(OverflowRef{pages.front()->id(), pages.back()->id(), record.size()}, record,
                      ref);
  overflow_written_.fetch_add(1, std::memory_order_relaxed);
}

void BTree::free_overflow(WriteContext& w, std::span<const std::byte> ref_bytes) {
  const OverflowRef ref = decode_overflow_ref(ref_bytes);
  PageChanges& meta = meta_changes(w);
  const MetaFields f = MetaPage::read(meta.page());
  // The whole chain joins the free list: only its last page changes.
  PageChanges* last = w.txn.find(ref.last);
  if (last == nullptr) last = &w.txn.track(buffers_.fix(ref.last, LatchMode::kExclusive));
  NodeWriter(*last).set_link(f.free_head);
  MetaPage::set(meta, MetaPage::kFreeHead, ref.first);
  MetaPage::set(meta, MetaPage::kFreeCount, f.free_count + overflow_pages(ref.size, page_size_));
}

bool BTree::patch_overflow(MiniTransaction& txn, PageChanges& leaf, std::size_t index,
                           std::size_t offset, std::span<const std::byte> bytes) {
  NodeWriter node(leaf);
  const OverflowRef ref = decode_overflow_ref(node.payload(index));
  if (offset + bytes.size() > ref.size) return false;
  if (offset < kOverflowPrefix) {
    const std::size_t k = std::min(bytes.size(), kOverflowPrefix - offset);
    node.patch_payload(index, kOverflowPrefixOffset + offset, bytes.first(k));
    bytes = bytes.subspan(k);
    offset += k;
  }
  const std::size_t capacity = overflow_capacity(page_size_);
  PageId next = ref.first;
  std::size_t at = kOverflowPrefix;
  while (!bytes.empty()) {
    if (offset < at + capacity) {
      PageChanges& page = txn.track(buffers_.fix(next, LatchMode::kExclusive));
      const std::size_t k = std::min(bytes.size(), at + capacity - offset);
      page.write(kSlotsOffset + (offset - at), bytes.data(), k);
      bytes = bytes.subspan(k);
      offset += k;
      next = Node(page.page(), page_size_).link();
    } else {
      const PageGuard page = buffers_.fix(next, LatchMode::kShared);
      next = Node(page.data(), page_size_).link();
    }
    at += capacity;
  }
  return true;
}

bool BTree::patch(MiniTransaction& txn, std::string_view key, std::size_t offset,
                  std::span<const std::byte> bytes) {
  PageGuard leaf = descend(key, LatchMode::kExclusive);
  const Node node(leaf.data(), page_size_);
  const SearchResult r = node.search(key);
  if (!r.found) return false;
  const bool overflow = (node.flags(r.index) & kOverflowRecord) != 0;
  if (!overflow && offset + bytes.size() > node.payload(r.index).size()) return false;
  if (overflow && offset + bytes.size() > decode_overflow_ref(node.payload(r.index)).size) {
    return false;
  }
  PageChanges& changes = txn.track(std::move(leaf));
  if (overflow) return patch_overflow(txn, changes, r.index, offset, bytes);
  NodeWriter(changes).patch_payload(r.index, offset, bytes);
  return true;
}

}  // namespace pmcached::engine::bptree

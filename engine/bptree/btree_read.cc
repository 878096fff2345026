// BTree: opening, the descent, reads and scans.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include "engine/bptree/btree.h"
#include "engine/bptree/btree_internal.h"
#include "engine/buffer/page_file.h"

namespace pmcached::engine::bptree {

BTree::BTree(BufferManager& buffers, unsigned b2_threshold)
    : buffers_(buffers), page_size_(buffers.page_size()), b2_threshold_(b2_threshold) {}

bool BTree::formatted(BufferManager& buffers) {
  if (buffers.file().page_count() <= kMetaPage) return false;
  const PageGuard meta = buffers.fix(kMetaPage, LatchMode::kShared);
  return MetaPage::valid(meta.data());
}

void BTree::format(MiniTransaction& txn) {
  constexpr PageId kFirstRoot = kMetaPage + 1;
  // The meta page last, as in every write.
  PageChanges& root = txn.track_new(buffers_.fix_new(kFirstRoot));
  PageChanges& meta = txn.track_new(buffers_.fix_new(kMetaPage));
  NodeWriter(root).init(NodeKind::kLeaf, 0, b2_threshold_);
  MetaPage::format(meta, MetaFields{kFirstRoot, 0, kFirstRoot + 1, buffer::kNoPage, 0, 0},
                   b2_threshold_ > 0 ? kB2MetaVersion : kMetaVersion);
  set_root(kFirstRoot, 0);
  items_.store(0, std::memory_order_relaxed);
}

void BTree::load() {
  const PageGuard meta = buffers_.fix(kMetaPage, LatchMode::kShared);
  if (!MetaPage::valid(meta.data())) {
    throw std::runtime_error("bptree: page 1 of " + buffers_.file().path() +
                             " is not a bptree meta page");
  }
  // A file of the other engine's pages, or of an older page layout, is refused, not misread.
  const std::uint16_t expected = b2_threshold_ > 0 ? kB2MetaVersion : kMetaVersion;
  if (MetaPage::version(meta.data()) != expected) {
    throw std::runtime_error(
        "bptree: " + buffers_.file().path() + " holds pages of layout version " +
        std::to_string(MetaPage::version(meta.data())) + ", this " +
        (b2_threshold_ > 0 ? "b2tree" : "bptree") + " reads version " + std::to_string(expected));
  }
  const MetaFields fields = MetaPage::read(meta.data());
  items_.store(fields.items, std::memory_order_relaxed);
  set_root(fields.root, static_cast<unsigned>(fields.root_level));
}

void BTree::set_root(PageId id, unsigned level) {
  root_level_.store(level, std::memory_order_relaxed);
  root_.store(id, std::memory_order_release);
  buffers_.set_root(id);
}

MetaFields BTree::meta() const {
  const PageGuard meta = buffers_.fix(kMetaPage, LatchMode::kShared);
  return MetaPage::read(meta.data());
}

BTreeStats BTree::stats() const noexcept {
  BTreeStats s;
  s.height = root_level_.load(std::memory_order_relaxed) + 1;
  s.splits = splits_.load(std::memory_order_relaxed);
  s.edge_splits = edge_splits_.load(std::memory_order_relaxed);
  s.merges = merges_.load(std::memory_order_relaxed);
  s.borrows = borrows_.load(std::memory_order_relaxed);
  s.root_splits = root_splits_.load(std::memory_order_relaxed);
  s.pessimistic_writes = pessimistic_.load(std::memory_order_relaxed);
  s.latched_reads = latched_reads_.load(std::memory_order_relaxed);
  s.overflow_records_written = overflow_written_.load(std::memory_order_relaxed);
  return s;
}

PageGuard BTree::fix_root(LatchMode leaf_mode, LatchMode inner_mode) const {
  bool leaf_hint = root_level_.load(std::memory_order_relaxed) == 0;
  for (;;) {
    const PageId id = root_.load(std::memory_order_acquire);
    const LatchMode mode = leaf_hint ? leaf_mode : inner_mode;
    PageGuard page = buffers_.fix(id, mode);
    // The root changes only under its old page's exclusive latch: latched, the id is current.
    if (root_.load(std::memory_order_acquire) != id) continue;
    const bool leaf = Node(page.data(), page_size_).is_leaf();
    if (leaf == leaf_hint || leaf_mode == inner_mode) return page;
    leaf_hint = leaf;  // the hint was stale: latch again in the mode the page needs
  }
}

PageGuard BTree::descend(std::string_view key, LatchMode leaf_mode) const {
  // Every page on the way compares bytes further into the key: fetch all of its cache lines now,
  // together, rather than one miss per page when the key is not in the cache.
  prefetch_lines(key.data(), key.size());
  PageGuard page = fix_root(leaf_mode, LatchMode::kShared);
  for (;;) {
    const Node node(page.data(), page_size_);
    if (!node.is_inner()) return page;
    const std::size_t i = node.child_index(key);
    auto* slot = reinterpret_cast<std::uint64_t*>(page.data() + node.child_offset(i));
    const LatchMode mode = node.level() == 1 ? leaf_mode : LatchMode::kShared;
    PageGuard child = buffers_.fix_child(page, slot, mode);
    page = std::move(child);  // the parent is released once the child is latched
  }
}

PageGuard BTree::hold_exclusive(PageGuard page) {
  if (Node(page.data(), page_size_).is_inner()) buffers_.unswizzle_children(page);
  return page;
}

void BTree::copy_record(const std::byte* leaf, std::size_t index, std::size_t offset, std::size_t n,
                        std::byte* out) const {
  if (n == 0) return;  // `out` may be null then
  const Node node(leaf, page_size_);
  const std::span<const std::byte> payload = node.payload(index);
  if ((node.flags(index) & kOverflowRecord) == 0) {
    std::memcpy(out, payload.data() + offset, n);
    return;
  }
  const std::span<const std::byte> prefix = overflow_prefix(payload);
  if (offset < kOverflowPrefix) {
    const std::size_t k = std::min(n, kOverflowPrefix - offset);
    std::memcpy(out, prefix.data() + offset, k);
    out += k;
    offset += k;
    n -= k;
  }
  // The chain holds bytes [kOverflowPrefix, size): skip whole pages before `offset`.
  const std::size_t capacity = overflow_capacity(page_size_);
  PageId next = decode_overflow_ref(payload).first;
  std::size_t at = kOverflowPrefix;  // record offset of the current page's first byte
  while (n > 0) {
    const PageGuard page = buffers_.fix(next, LatchMode::kShared);
    const std::span<const std::byte> bytes = overflow_bytes(page.data());
    if (offset < at + capacity) {
      const std::size_t from = offset - at;
      const std::size_t k = std::min(n, bytes.size() - from);
      std::memcpy(out, bytes.data() + from, k);
      out += k;
      offset += k;
      n -= k;
    }
    at += capacity;
    next = Node(page.data(), page_size_).link();
  }
}

#if defined(__SANITIZE_THREAD__)
// An optimistic read of a page a writer is changing is a data race by design (the version check
// throws away what it read), and TSan reports it as one: its pass checks the latched reads.
constexpr bool kOptimisticReads = false;
#else
constexpr bool kOptimisticReads = true;
#endif

std::optional<bool> BTree::read_optimistic(std::string_view key, RecordBuffer& out,
                                           std::size_t limit) const {
  prefetch_lines(key.data(), key.size());  // as descend() does
  const PageId root = root_.load(std::memory_order_acquire);
  buffer::OptimisticPage page = buffers_.read_optimistic(root);
  // As in fix_root(): the root changes under its old page's exclusive latch, so once the
  // version is read a stale id is noticed here or by the version.
  if (!page || root_.load(std::memory_order_acquire) != root) return std::nullopt;
  for (;;) {
    const Node node(page.data(), page_size_);
    if (node.is_leaf()) break;
    if (!node.is_inner()) return std::nullopt;  // a page that is changing
    const std::size_t i = node.child_index(key);
    const auto* slot = reinterpret_cast<const std::uint64_t*>(page.data() + node.child_offset(i));
    page = buffers_.read_child_optimistic(page, slot);
    if (!page) return std::nullopt;
  }
  const Node node(page.data(), page_size_);
  const SearchResult r = node.search(key);
  if (!r.found) {
    if (!buffers_.validate(page)) return std::nullopt;
    return false;
  }
  if ((node.flags(r.index) & kOverflowRecord) != 0) return std::nullopt;  // a chain: latch it
  const std::span<const std::byte> payload = node.payload(r.index);
  const std::size_t size = std::min(limit, payload.size());
  std::byte* to = out.resize(size);
  if (size > 0) std::memcpy(to, payload.data(), size);
  if (!buffers_.validate(page)) return std::nullopt;
  return true;
}

bool BTree::read(std::string_view key, RecordBuffer& out, std::size_t limit) const {
  if (kOptimisticReads) {
    if (const std::optional<bool> found = read_optimistic(key, out, limit)) return *found;
    latched_reads_.fetch_add(1, std::memory_order_relaxed);
  }
  const PageGuard leaf = descend(key, LatchMode::kShared);
  const Node node(leaf.data(), page_size_);
  const SearchResult r = node.search(key);
  if (!r.found) return false;
  const std::span<const std::byte> payload = node.payload(r.index);
  const std::size_t size = std::min(limit, (node.flags(r.index) & kOverflowRecord) != 0
                                               ? decode_overflow_ref(payload).size
                                               : payload.size());
  copy_record(leaf.data(), r.index, 0, size, out.resize(size));
  return true;
}

void BTree::scan(std::string_view from, std::size_t prefix, const ScanVisitor& visit) const {
  struct Item {
    std::size_t key_end;   // in `text`
    std::size_t head_end;  // in `text`
  };
  std::string cursor(from);
  bool inclusive = true;
  std::string text;  // a leaf's keys and heads, copied out
  std::vector<Item> items;
  for (;;) {
    text.clear();
    items.clear();
    {
      PageGuard leaf = descend(cursor, LatchMode::kShared);
      Node node(leaf.data(), page_size_);
      const SearchResult r = node.search(cursor);
      std::size_t i = r.index + (r.found && !inclusive ? 1 : 0);
      // Nothing past the cursor here: the right sibling (coupled, left before right).
      while (i == node.count() && node.link() != buffer::kNoPage) {
        PageGuard next = buffers_.fix(node.link(), LatchMode::kShared);
        leaf = std::move(next);
        node = Node(leaf.data(), page_size_);
        i = 0;
      }
      for (; i < node.count(); ++i) {
        const std::string_view key = node.key(i);
        const std::span<const std::byte> payload = node.payload(i);
        const std::size_t size = (node.flags(i) & kOverflowRecord) != 0
                                     ? decode_overflow_ref(payload).size
                                     : payload.size();
        const std::size_t n = std::min(prefix, size);
        text.append(key);
        const std::size_t key_end = text.size();
        text.resize(key_end + n);
        copy_record(leaf.data(), i, 0, n, reinterpret_cast<std::byte*>(text.data() + key_end));
        items.push_back(Item{key_end, text.size()});
      }
    }
    if (items.empty()) return;
    std::size_t begin = 0;
    for (const Item& item : items) {
      const std::string_view key(text.data() + begin, item.key_end - begin);
      const std::span<const std::byte> head(
          reinterpret_cast<const std::byte*>(text.data() + item.key_end),
          item.head_end - item.key_end);
      if (!visit(key, head)) return;
      begin = item.head_end;
    }
    const Item& last = items.back();
    const std::size_t last_begin =
        items.size() > 1 ? items[items.size() - 2].head_end : std::size_t{0};
    cursor.assign(text.data() + last_begin, last.key_end - last_begin);
    inclusive = false;
  }
}

}  // namespace pmcached::engine::bptree

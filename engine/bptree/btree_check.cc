// BTree::check(): the structural invariants, walked from the meta page.
#include <string>
#include <utility>
#include <vector>

#include "engine/bptree/btree.h"
#include "engine/bptree/btree_internal.h"

namespace pmcached::engine::bptree {

struct BTree::CheckState {
  std::vector<std::uint8_t> seen;                 // by page id, below the high-water mark
  std::vector<std::pair<PageId, PageId>> leaves;  // in key order: (leaf, its right link)
  std::uint64_t items = 0;
};

namespace {

std::string page_name(PageId id) { return "page " + std::to_string(id) + ": "; }

// Claims page `id` for one use; an error if it is out of range or already used.
std::string claim(std::vector<std::uint8_t>& seen, PageId id, const char* what) {
  if (id == buffer::kNoPage || id >= seen.size()) {
    return std::string(what) + " page id " + std::to_string(id) + " is outside 1.." +
           std::to_string(seen.size() - 1);
  }
  if (seen[id] != 0) return page_name(id) + "reached twice (" + what + ")";
  seen[id] = 1;
  return "";
}

}  // namespace

std::string BTree::check() const {
  const MetaFields f = meta();
  if (f.root != root()) return "the meta page's root differs from the tree's";
  CheckState state;
  state.seen.assign(f.high_water, 0);
  if (f.high_water <= kMetaPage) return "the high-water mark is below the meta page";
  state.seen[kMetaPage] = 1;
  std::string error =
      check_node(state, f.root, static_cast<unsigned>(f.root_level), nullptr, nullptr, true, false);
  if (!error.empty()) return error;
  for (std::size_t i = 0; i < state.leaves.size(); ++i) {
    const PageId expected = i + 1 < state.leaves.size() ? state.leaves[i + 1].first : 0;
    if (state.leaves[i].second != expected) {
      return page_name(state.leaves[i].first) + "right sibling link " +
             std::to_string(state.leaves[i].second) + ", expected " + std::to_string(expected);
    }
  }
  if (state.items != f.items) {
    return "the leaves hold " + std::to_string(state.items) + " items, the meta page says " +
           std::to_string(f.items);
  }
  if (state.items != size()) return "size() differs from the meta page's item count";
  std::uint64_t free_pages = 0;
  for (PageId id = f.free_head; id != buffer::kNoPage; ++free_pages) {
    if (error = claim(state.seen, id, "free list"); !error.empty()) return error;
    const PageGuard page = buffers_.fix(id, LatchMode::kShared);
    id = Node(page.data(), page_size_).link();
  }
  if (f.stack_size > MetaPage::stack_capacity(page_size_)) return "the free stack overflows";
  {
    const PageGuard meta_page = buffers_.fix(kMetaPage, LatchMode::kShared);
    for (std::size_t i = 0; i < f.stack_size; ++i) {
      error = claim(state.seen, MetaPage::stack_entry(meta_page.data(), i), "free stack");
      if (!error.empty()) return error;
    }
  }
  if (free_pages != f.free_count) {
    return "the free list holds " + std::to_string(free_pages) + " pages, the meta page says " +
           std::to_string(f.free_count);
  }
  for (PageId id = 1; id < f.high_water; ++id) {
    if (state.seen[id] == 0) return page_name(id) + "lost (neither in the tree nor free)";
  }
  return "";
}

std::string BTree::check_node(CheckState& state, PageId id, unsigned level, const std::string* low,
                              const std::string* high, bool is_root, bool only_child) const {
  if (std::string error = claim(state.seen, id, "tree"); !error.empty()) return error;
  const PageGuard page = buffers_.fix(id, LatchMode::kShared);
  const Node node(page.data(), page_size_);
  const std::string at = page_name(id);
  const bool inner = level > 0;
  if (node.kind() != (inner ? NodeKind::kInner : NodeKind::kLeaf)) return at + "wrong kind";
  if (node.level() != level) return at + "wrong level";
  const std::size_t n = node.count();
  if (node.data_start() > page_size_ || node.data_start() < node.slots_offset() + kSlotSize * n) {
    return at + "data_start overlaps the slots";
  }
  if (inner && is_root && n == 0) return at + "a root with one child";
  if (!inner && !is_root && !only_child && n == 0) return at + "an empty leaf with siblings";

  std::size_t record_bytes = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const Slot s = node.slot(i);
    const std::size_t size = record_size(inner, s.key_size, s.payload_size);
    const std::string slot = at + "slot " + std::to_string(i) + ": ";
    if (s.offset < node.data_start() || s.offset + size > page_size_) return slot + "out of bounds";
    record_bytes += size;
    const std::string_view key = node.key(i);
    if (key.empty() || key.size() > kMaxKeySize) return slot + "key size";
    if (s.head != node.head_of(key, node.slot_skip(i))) return slot + "head differs from the key";
    if (const SearchResult r = node.search(key); !r.found || r.index != i) {
      return slot + "a search for its key does not find it";
    }
    if (i > 0 && node.key(i - 1) >= key) return slot + "keys out of order";
    if (low != nullptr && key < *low) return slot + "key below the page's lower fence";
    if (high != nullptr && key >= *high) return slot + "key at or above the page's upper fence";
    if (inner) {
      if (s.offset % 8 != 0 || s.payload_size != 8) return slot + "misaligned child reference";
    } else if ((s.flags & kOverflowRecord) != 0) {
      if (s.payload_size != kOverflowRefSize) return slot + "overflow reference size";
      if (std::string error = check_chain(state, node.payload(i)); !error.empty()) {
        return slot + error;
      }
    } else if (s.payload_size > max_inline_payload(page_size_)) {
      return slot + "an inline record above the threshold";
    }
  }
  if (record_bytes + node.fragmented() != page_size_ - node.data_start()) {
    return at + "record bytes and dead bytes do not add up to the record area";
  }
  if (!inner) {
    state.items += n;
    state.leaves.emplace_back(id, node.link());
    return "";
  }
  for (std::size_t i = 0; i <= n; ++i) {
    const std::string child_low =
        i == 0 ? (low ? *low : std::string()) : std::string(node.key(i - 1));
    const std::string child_high =
        i == n ? (high ? *high : std::string()) : std::string(node.key(i));
    const PageId child =
        buffers_.child_id(load_value<std::uint64_t>(page.data() + node.child_offset(i)));
    std::string error =
        check_node(state, child, level - 1, (i == 0 && low == nullptr) ? nullptr : &child_low,
                   (i == n && high == nullptr) ? nullptr : &child_high, false, n == 0);
    if (!error.empty()) return error;
  }
  return "";
}

std::string BTree::check_chain(CheckState& state, std::span<const std::byte> ref_bytes) const {
  const OverflowRef ref = decode_overflow_ref(ref_bytes);
  if (ref.size <= max_inline_payload(page_size_))
    return "an overflow record small enough to inline";
  std::size_t rest = ref.size - kOverflowPrefix;
  PageId id = ref.first;
  PageId last = buffer::kNoPage;
  while (rest > 0) {
    if (std::string error = claim(state.seen, id, "overflow"); !error.empty()) return error;
    const PageGuard page = buffers_.fix(id, LatchMode::kShared);
    const Node node(page.data(), page_size_);
    if (node.kind() != NodeKind::kOverflow) return page_name(id) + "not an overflow page";
    const std::size_t expected = std::min(rest, overflow_capacity(page_size_));
    if (overflow_bytes(page.data()).size() != expected) return page_name(id) + "wrong length";
    rest -= expected;
    last = id;
    id = node.link();
  }
  if (last != ref.last) return "the reference's last page is not the chain's";
  if (id != buffer::kNoPage) return page_name(last) + "the chain goes on past the record";
  return "";
}

}  // namespace pmcached::engine::bptree

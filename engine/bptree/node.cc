#include "engine/bptree/node.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

#include "engine/b2tree/embedded_tree.h"

namespace pmcached::engine::bptree {
namespace {

std::atomic<std::uint64_t> rebuild_count{0};
std::atomic<std::uint64_t> rebuild_ns{0};
std::atomic<std::uint64_t> built_bytes{0};
std::atomic<std::uint64_t> built_max_bytes{0};
std::atomic<std::uint64_t> built_ranges{0};

// The most bytes a rebuilt tree may take: seed 004 finds ~0.5% of a page enough; a page of
// keys with long distinct prefixes may need more, a full page gets a coarser tree.
constexpr std::size_t max_tree_bytes(std::size_t page_size) noexcept { return page_size / 16; }

}  // namespace

TreeRebuilds tree_rebuilds() noexcept {
  return {rebuild_count.load(std::memory_order_relaxed), rebuild_ns.load(std::memory_order_relaxed),
          built_bytes.load(std::memory_order_relaxed),
          built_max_bytes.load(std::memory_order_relaxed),
          built_ranges.load(std::memory_order_relaxed)};
}

std::size_t Node::slot_skip(std::size_t i) const noexcept {
  const std::span<const std::byte> t = tree();
  if (t.empty()) return 0;
  const b2tree::RangeHit hit = b2tree::lookup(t, key(i), count());
  return hit.skip == b2tree::kNoSkip ? 0 : hit.skip;
}

int Node::compare(std::string_view key, std::uint32_t head, std::size_t i,
                  std::size_t skip) const noexcept {
  const Slot s = slot(i);
  if (head != s.head) return head < s.head ? -1 : 1;
  const std::string_view other(reinterpret_cast<const char*>(page_ + s.offset + s.payload_size),
                               s.key_size);
  // Equal heads: both keys share `skip` bytes and then four more unless a key ends before.
  const std::size_t known = skip + 4;
  if (key.size() >= known && other.size() >= known) {
    return key.substr(known).compare(other.substr(known));
  }
  return key.substr(skip).compare(other.substr(skip));
}

SearchResult Node::search(std::string_view key) const noexcept {
  std::size_t lo = 0;
  std::size_t hi = count();
  std::size_t skip = 0;
  bool whole_keys = false;  // the key left the embedded tree by a virtual edge
  if (const std::span<const std::byte> t = tree(); !t.empty()) {
    const b2tree::RangeHit hit = b2tree::lookup(t, key, hi);
    lo = hit.begin;
    hi = hit.end;
    // Seed 004 §3.5: the range's slots are a few cache lines; fetch them all at once rather than
    // one miss per step of the binary search.
    const std::byte* slots = page_ + slots_offset();
    for (std::size_t at = kSlotSize * lo; at < kSlotSize * hi; at += 64) {
      __builtin_prefetch(slots + at);
    }
    whole_keys = hit.skip == b2tree::kNoSkip;
    skip = whole_keys ? 0 : hit.skip;
  }
  const std::uint32_t head = key_head(key, skip);
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    const int c = whole_keys ? key.compare(this->key(mid)) : compare(key, head, mid, skip);
    if (c == 0) return {mid, true};
    if (c < 0) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return {lo, false};
}

std::size_t Node::child_index(std::string_view key) const noexcept {
  // Keys equal to a separator belong to its right: the first separator greater than the key.
  const SearchResult r = search(key);
  return r.found ? r.index + 1 : r.index;
}

void NodeWriter::init(NodeKind kind, unsigned level, unsigned b2_threshold) noexcept {
  std::byte header[kSlotsOffset - kKindOffset] = {};
  const auto k = static_cast<std::uint16_t>(kind);
  const auto data_start = static_cast<std::uint32_t>(page_size());
  const auto l = static_cast<std::uint16_t>(level);
  std::memcpy(header + (kKindOffset - kKindOffset), &k, sizeof k);
  std::memcpy(header + (kDataStartOffset - kKindOffset), &data_start, sizeof data_start);
  std::memcpy(header + (kLevelOffset - kKindOffset), &l, sizeof l);
  changes_.write(kKindOffset, header, sizeof header);
  enable_tree(b2_threshold);
}

void NodeWriter::rebuild_tree() noexcept {
  if (tree_bytes() == 0) return;  // a bptree page
  const auto started = std::chrono::steady_clock::now();
  const std::size_t n = count();
  const std::size_t old_area = tree_bytes();
  const std::size_t budget =
      std::min(old_area - kTreeHeaderSize + free_contiguous(), max_tree_bytes(page_size()));
  std::vector<std::byte> tree(budget);
  const b2tree::BuildResult built =
      b2tree::build([this](std::size_t i) { return key(i); }, n, tree_threshold(), tree);

  // The slots move to just after the new tree; then the tree and its header are written.
  const std::size_t area = kTreeHeaderSize + built.bytes;
  if (area != old_area && n > 0) changes_.move(kSlotsOffset + area, slots_offset(), kSlotSize * n);
  changes_.store(kTreeBytesOffset, static_cast<std::uint16_t>(area));
  changes_.store(kSlotsOffset, std::uint16_t{0});  // changes since the build
  if (built.bytes > 0) changes_.write(kSlotsOffset + kTreeHeaderSize, tree.data(), built.bytes);

  // Every head from its range's skip (from 0 where no tree fits).
  std::size_t range = 0;
  for (std::size_t i = 0; i < n; ++i) {
    while (range < built.range_end.size() && built.range_end[range] <= i) ++range;
    const std::size_t skip = range < built.range_skip.size() ? built.range_skip[range] : 0;
    const std::uint32_t head = key_head(key(i), skip);
    if (head != slot(i).head) {
      changes_.store(slots_offset() + kSlotSize * i + offsetof(Slot, head), head);
    }
  }
  rebuild_count.fetch_add(1, std::memory_order_relaxed);
  built_bytes.fetch_add(built.bytes, std::memory_order_relaxed);
  built_ranges.fetch_add(built.range_end.size(), std::memory_order_relaxed);
  std::uint64_t max = built_max_bytes.load(std::memory_order_relaxed);
  while (built.bytes > max &&
         !built_max_bytes.compare_exchange_weak(max, built.bytes, std::memory_order_relaxed)) {
  }
  rebuild_ns.fetch_add(
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now() - started)
                                     .count()),
      std::memory_order_relaxed);
}

void NodeWriter::enable_tree(unsigned b2_threshold) noexcept {
  if (tree_bytes() != 0 || b2_threshold == 0) return;
  if (free_contiguous() < kTreeHeaderSize) return;
  const std::size_t n = count();
  if (n > 0) changes_.move(kSlotsOffset + kTreeHeaderSize, kSlotsOffset, kSlotSize * n);
  const std::uint16_t area_header[2] = {0, static_cast<std::uint16_t>(b2_threshold)};
  changes_.store(kTreeBytesOffset, static_cast<std::uint16_t>(kTreeHeaderSize));
  changes_.write(kSlotsOffset, area_header, sizeof area_header);
  rebuild_tree();
}

void NodeWriter::count_tree_change(bool may_rebuild) noexcept {
  const unsigned changes = std::min(tree_changes() + 1, 0xFFFFu);
  // Every `threshold` changes, or a quarter of the page's slots if that is more: a rebuild of a
  // 64 KiB page of 600 keys takes ~7 us, and ranges that grew by a quarter still narrow well.
  if (may_rebuild && changes >= std::max<std::size_t>(tree_threshold(), count() / 4)) {
    rebuild_tree();
  } else {
    changes_.store(kSlotsOffset, static_cast<std::uint16_t>(changes));
  }
}

namespace {

// Stores a u16 of the range array at its offset in the tree (after the area's header).
auto tree_store(PageChanges& changes) {
  return [&changes](std::size_t offset, std::uint16_t value) {
    changes.store(kSlotsOffset + kTreeHeaderSize + offset, value);
  };
}

}  // namespace

bool NodeWriter::insert(std::size_t index, std::string_view key, std::span<const std::byte> payload,
                        std::uint16_t flags) noexcept {
  const bool inner = is_inner();
  const std::size_t record = record_size(inner, key.size(), payload.size());
  if (!fits(kSlotSize + record)) return false;
  if (free_contiguous() < kSlotSize + record) compact();

  const std::size_t n = count();
  // b2tree pages: the range the key falls in, its skip for the head, and whether the range
  // array can simply grow (else the tree is rebuilt: the key differs from its range's prefix).
  b2tree::RangeHit hit{0, 0, 0, b2tree::kNoSkip};
  const bool b2 = tree_bytes() != 0;
  if (!tree().empty()) hit = b2tree::lookup(tree(), key, n);
  const bool in_range = hit.skip != b2tree::kNoSkip && hit.begin <= index && index <= hit.end;
  const std::size_t skip = in_range ? hit.skip : 0;
  const std::size_t offset = data_start() - record;
  if (!payload.empty()) changes_.write(offset, payload.data(), payload.size());
  if (!key.empty()) changes_.write(offset + payload.size(), key.data(), key.size());
  if (record > key.size() + payload.size()) {  // inner padding: keep the page deterministic
    changes_.fill(offset + payload.size() + key.size(), std::byte{0},
                  record - key.size() - payload.size());
  }
  set_data_start(offset);

  const std::size_t at = slots_offset() + kSlotSize * index;
  if (index < n) changes_.move(at + kSlotSize, at, kSlotSize * (n - index));
  const Slot s{static_cast<std::uint16_t>(offset), static_cast<std::uint16_t>(key.size()),
               static_cast<std::uint16_t>(payload.size()), flags, key_head(key, skip)};
  changes_.store(at, s);
  set_count(n + 1);
  if (!b2) return true;
  if (tree().empty()) {
    count_tree_change();
  } else if (in_range) {
    b2tree::after_insert(tree(), hit.range, tree_store(changes_));
    count_tree_change();
  } else {
    rebuild_tree();
  }
  return true;
}

void NodeWriter::erase(std::size_t index) noexcept {
  const std::size_t n = count();
  const Slot s = slot(index);
  const std::size_t record = record_size(is_inner(), s.key_size, s.payload_size);
  if (s.offset == data_start()) {
    set_data_start(data_start() + record);  // the lowest record: the gap just grows
  } else {
    set_fragmented(fragmented() + record);
  }
  const std::size_t at = slots_offset() + kSlotSize * index;
  if (index + 1 < n) changes_.move(at, at + kSlotSize, kSlotSize * (n - index - 1));
  set_count(n - 1);
  if (tree_bytes() == 0) return;
  if (const std::span<const std::byte> t = tree(); !t.empty()) {
    b2tree::after_erase(t, b2tree::range_of_slot(t, index), tree_store(changes_));
  }
  // No rebuild here: a rebuilt tree may take more room, and callers count on the room an erase
  // frees (replace_payload and a merge's separator swap insert right after it).
  count_tree_change(/*may_rebuild=*/false);
}

bool NodeWriter::replace_payload(std::size_t index, std::span<const std::byte> payload,
                                 std::uint16_t flags) noexcept {
  const Slot s = slot(index);
  if (payload.size() == s.payload_size) {
    if (!payload.empty()) changes_.write(s.offset, payload.data(), payload.size());
    if (flags != s.flags) {
      changes_.store(slots_offset() + kSlotSize * index + offsetof(Slot, flags), flags);
    }
    return true;
  }
  const bool inner = is_inner();
  const std::size_t old_entry = entry_size(inner, s.key_size, s.payload_size);
  const std::size_t new_entry = entry_size(inner, s.key_size, payload.size());
  if (new_entry > free_total() + old_entry) return false;
  // The key outlives its slot's erase only as a copy (a compaction may move it).
  char key[kMaxKeySize];
  const std::string_view old_key = this->key(index);
  std::memcpy(key, old_key.data(), old_key.size());
  erase(index);
  return insert(index, std::string_view(key, s.key_size), payload, flags);
}

void NodeWriter::patch_payload(std::size_t index, std::size_t offset,
                               std::span<const std::byte> bytes) noexcept {
  changes_.write(slot(index).offset + offset, bytes.data(), bytes.size());
}

void NodeWriter::compact() noexcept {
  const std::size_t n = count();
  const bool inner = is_inner();
  const std::byte* page = this->page();
  // Records are copied out first: a record may move onto bytes another still occupies.
  std::vector<std::byte> records(node_capacity(page_size()));
  std::vector<Slot> slots(n);
  std::size_t end = records.size();
  for (std::size_t i = 0; i < n; ++i) {
    slots[i] = slot(i);
    const std::size_t size = record_size(inner, slots[i].key_size, slots[i].payload_size);
    end -= size;
    std::memcpy(records.data() + end, page + slots[i].offset, size);
    slots[i].offset = static_cast<std::uint16_t>(kSlotsOffset + end);
  }
  const std::size_t start = kSlotsOffset + end;
  changes_.write(start, records.data() + end, records.size() - end);
  if (n > 0) changes_.write(slots_offset(), slots.data(), kSlotSize * n);
  set_data_start(start);
  set_fragmented(0);
}

void for_each_child_slot(std::byte* page, const std::function<void(std::uint64_t& slot)>& visit) {
  if (load_value<std::uint16_t>(page + kKindOffset) !=
      static_cast<std::uint16_t>(NodeKind::kInner)) {
    return;
  }
  const std::size_t n = load_value<std::uint16_t>(page + kCountOffset);
  const std::size_t slots = kSlotsOffset + load_value<std::uint16_t>(page + kTreeBytesOffset);
  for (std::size_t i = 0; i < n; ++i) {
    const auto offset = load_value<std::uint16_t>(page + slots + kSlotSize * i);
    visit(*reinterpret_cast<std::uint64_t*>(page + offset));
  }
  visit(*reinterpret_cast<std::uint64_t*>(page + kLinkOffset));
}

}  // namespace pmcached::engine::bptree

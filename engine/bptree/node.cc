#include "engine/bptree/node.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

#include "engine/b2tree/embedded_tree.h"
#include "engine/bptree/overflow.h"

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

// A page whose tree at the threshold is small (few keys: a store's leaf of 100-byte items holds a
// third of the keys of a tree of 8-byte payloads) gets ranges of half the threshold, and so on
// down to kFinestThreshold, while the finer tree stays within this share of the page (0.4%,
// under the 0.5% seed 004 reports; 256 bytes of a 64 KiB page).
constexpr std::size_t refined_tree_bytes(std::size_t page_size) noexcept { return page_size / 256; }
constexpr unsigned kFinestThreshold = 8;

}  // namespace

TreeRebuilds tree_rebuilds() noexcept {
  return {rebuild_count.load(std::memory_order_relaxed), rebuild_ns.load(std::memory_order_relaxed),
          built_bytes.load(std::memory_order_relaxed),
          built_max_bytes.load(std::memory_order_relaxed),
          built_ranges.load(std::memory_order_relaxed)};
}

// A wide slot keeps the payload length in 15 bits and the only flag in the 16th, the key length
// in a byte.
static_assert(kOverflowRecord == 1);
static_assert(max_inline_payload(65536) < 0x8000 && kMaxKeySize < 0x100);

void encode_slot(const Slot& slot, bool wide, std::byte* out) noexcept {
  std::memcpy(out, &slot.offset, 2);
  if (!wide) {
    std::memcpy(out + 2, &slot.key_size, 2);
    std::memcpy(out + 4, &slot.payload_size, 2);
    std::memcpy(out + 6, &slot.flags, 2);
    const auto head = static_cast<std::uint32_t>(slot.head);
    std::memcpy(out + 8, &head, 4);
    return;
  }
  const auto payload = static_cast<std::uint16_t>(slot.payload_size | (slot.flags << 15));
  const std::uint64_t word = slot.head << 8 | slot.key_size;
  std::memcpy(out + 2, &payload, 2);
  std::memcpy(out + 4, &word, 8);
}

namespace {

// `s` past its first `n` bytes (empty if it is shorter): never throws, as an optimistic reader
// may find a slot whose key is shorter than the skip it was given.
std::string_view tail(std::string_view s, std::size_t n) noexcept {
  return s.substr(std::min(n, s.size()));
}

// <0, 0, >0 as `key` sorts before, equal to or after the key of the slot at `at` (narrow or
// `Wide`), where `head` is the head that slot layout takes of `key` after `skip` bytes, which
// both keys share (0 on bptree pages). Reads the record only when the heads tie.
template <bool Wide>
int compare_slot(const std::byte* page, std::string_view key, std::uint64_t head,
                 const std::byte* at, std::size_t skip) noexcept {
  const Slot s = decode_slot(at, Wide);
  if (head != s.head) return head < s.head ? -1 : 1;
  const std::string_view other(reinterpret_cast<const char*>(page + s.offset + s.payload_size),
                               s.key_size);
  // Equal heads: both keys share the head's bytes after `skip` unless a key ends before.
  const std::size_t known = skip + (Wide ? kWideHeadBytes : kNarrowHeadBytes);
  if (key.size() >= known && other.size() >= known) {
    return key.substr(known).compare(other.substr(known));
  }
  return tail(key, skip).compare(tail(other, skip));
}

}  // namespace

std::size_t Node::slot_skip(std::size_t i) const noexcept {
  const std::span<const std::byte> t = tree();
  if (t.empty()) return 0;
  const b2tree::RangeHit hit = b2tree::lookup(t, key(i), count());
  return hit.skip == b2tree::kNoSkip ? 0 : hit.heads_at;
}

namespace {

// The first of slots [lo, hi) whose key is not less than the one `compare(i)` compares with it
// (<0, 0, >0 as that key sorts before, equals or sorts after slot i's); found if equal.
template <typename Compare>
SearchResult binary_search(std::size_t lo, std::size_t hi, const Compare& compare) noexcept {
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    const int c = compare(mid);
    if (c == 0) return {mid, true};
    if (c < 0) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return {lo, false};
}

// Bytes [from, to) of `s`, fewer where it ends before `to`.
std::string_view bytes_between(std::string_view s, std::size_t from, std::size_t to) noexcept {
  return tail(s, from).substr(0, to - std::min(from, to));
}

}  // namespace

SearchResult Node::search(std::string_view key) const noexcept {
  std::size_t lo = 0;
  std::size_t hi = count();
  const std::byte* slots = page_ + slots_offset();
  if (tree_bytes() == 0) {  // a bptree page: narrow slots, heads from the key's start
    const std::uint32_t head = key_head(key);
    return binary_search(lo, hi, [&](std::size_t mid) {
      return compare_slot<false>(page_, key, head, slots + kSlotSize * mid, 0);
    });
  }
  std::size_t skip = 0;
  std::size_t heads_at = 0;
  bool whole_keys = false;  // the key left the embedded tree by a virtual edge
  if (const std::span<const std::byte> t = tree(); !t.empty()) {
    // The walk reads the tree's nodes one after another, each where the last one points: fetch
    // the whole region (a few hundred bytes, seed 004 §4.6) at once rather than one miss per node.
    prefetch_lines(t.data(), t.size());
    const b2tree::RangeHit hit = b2tree::lookup(t, key, hi);
    lo = hit.begin;
    hi = hit.end;
    // Seed 004 §3.5: the range's slots are a few cache lines; fetch them all at once rather than
    // one miss per step of the binary search.
    prefetch_lines(slots + kSlotSize * lo, kSlotSize * (hi - lo));
    whole_keys = hit.skip == b2tree::kNoSkip;
    skip = whole_keys ? 0 : hit.skip;
    heads_at = whole_keys ? 0 : hit.heads_at;
  }
  const std::uint64_t head = key_head_wide(key, heads_at);
  const SearchResult r = binary_search(lo, hi, [&](std::size_t mid) {
    return whole_keys ? key.compare(this->key(mid))
                      : compare_slot<true>(page_, key, head, slots + kSlotSize * mid, heads_at);
  });
  if (heads_at == skip || lo == hi) return r;
  // The range's unconfirmed prefix: its keys share bytes [skip, heads_at), which the tree did
  // not compare with the key. Compared now with one of them (the found one, already read): where
  // the key differs there it sorts before or after the whole range, and is not in it.
  const std::string_view other = this->key(std::min(r.index, hi - 1));
  const int c = bytes_between(key, skip, heads_at).compare(bytes_between(other, skip, heads_at));
  if (c == 0) return r;
  return {c < 0 ? lo : hi, false};
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
  const b2tree::KeyAt key_at = [this](std::size_t i) { return key(i); };
  const b2tree::Unconfirmed unconfirmed =
      is_leaf() ? b2tree::Unconfirmed::kPrefixes : b2tree::Unconfirmed::kNone;
  std::vector<std::byte> tree(budget);
  b2tree::BuildResult built = b2tree::build(key_at, n, tree_threshold(), tree, unconfirmed);
  const std::size_t refined_budget = std::min(budget, refined_tree_bytes(page_size()));
  std::vector<std::byte> finer;  // sized only when a finer tree is tried
  // Halving the threshold takes 1.5-2 times the bytes: a tree over 2/3 of the share is not
  // tried finer (a build that comes out too coarse would cost an insert for nothing).
  for (unsigned threshold = tree_threshold() / 2;
       threshold >= kFinestThreshold && built.bytes > 0 &&
       built.bytes + built.bytes / 2 <= refined_budget;
       threshold /= 2) {
    finer.resize(refined_budget);
    b2tree::BuildResult candidate = b2tree::build(key_at, n, threshold, finer, unconfirmed);
    // build() coarsens a tree that does not fit; only a tree that fits at `threshold` is finer.
    if (candidate.bytes == 0 || candidate.range_end.size() <= built.range_end.size()) break;
    built = std::move(candidate);
    tree.swap(finer);
  }

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
    const Slot s = slot(i);
    const std::uint64_t head = key_head_wide(key(i), skip);
    if (head != s.head) {
      changes_.store(slots_offset() + kSlotSize * i + 4, head << 8 | s.key_size);
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
  // The slots move after the area's header and become wide (heads from 0 until the rebuild).
  const std::size_t n = count();
  std::vector<std::byte> slots(kSlotSize * n);
  for (std::size_t i = 0; i < n; ++i) {
    Slot s = slot(i);
    s.head = key_head_wide(key(i), 0);
    encode_slot(s, /*wide=*/true, slots.data() + kSlotSize * i);
  }
  const std::uint16_t area_header[2] = {0, static_cast<std::uint16_t>(b2_threshold)};
  changes_.store(kTreeBytesOffset, static_cast<std::uint16_t>(kTreeHeaderSize));
  changes_.write(kSlotsOffset, area_header, sizeof area_header);
  if (n > 0) changes_.write(kSlotsOffset + kTreeHeaderSize, slots.data(), slots.size());
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
  b2tree::RangeHit hit{0, 0, 0, b2tree::kNoSkip, b2tree::kNoSkip};
  const bool b2 = tree_bytes() != 0;
  if (!tree().empty()) hit = b2tree::lookup(tree(), key, n);
  bool in_range = hit.skip != b2tree::kNoSkip && hit.begin <= index && index <= hit.end;
  if (in_range && hit.heads_at != hit.skip) {
    // The key must share the range's unconfirmed prefix, which an empty range cannot show.
    in_range =
        hit.begin < hit.end && bytes_between(key, hit.skip, hit.heads_at) ==
                                   bytes_between(this->key(hit.begin), hit.skip, hit.heads_at);
  }
  const std::size_t skip = in_range ? hit.heads_at : 0;
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
               static_cast<std::uint16_t>(payload.size()), flags,
               b2 ? key_head_wide(key, skip) : key_head(key)};
  std::byte encoded[kSlotSize];
  encode_slot(s, b2, encoded);
  changes_.write(at, encoded, kSlotSize);
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
      Slot changed = s;
      changed.flags = flags;
      std::byte encoded[kSlotSize];
      encode_slot(changed, wide_slots(), encoded);
      // Narrow slots keep the flags at 6, wide ones with the payload length at 2.
      const std::size_t field = wide_slots() ? 2 : 6;
      changes_.write(slots_offset() + kSlotSize * index + field, encoded + field, 2);
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
  std::vector<std::byte> slots(kSlotSize * n);
  std::size_t end = records.size();
  for (std::size_t i = 0; i < n; ++i) {
    Slot s = slot(i);
    const std::size_t size = record_size(inner, s.key_size, s.payload_size);
    end -= size;
    std::memcpy(records.data() + end, page + s.offset, size);
    s.offset = static_cast<std::uint16_t>(kSlotsOffset + end);
    encode_slot(s, wide_slots(), slots.data() + kSlotSize * i);
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

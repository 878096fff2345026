// Node: the slotted page of the bptree engine (leaf and inner pages), read through Node and
// changed through NodeWriter, which makes every change through buffer::PageChanges so that it can
// be logged. Pure functions on page bytes: no I/O, no latches.
//
// Layout version 1 for bptree files, 4 for b2tree files (the meta page says which; docs/LAYOUTS.md)
// (seed 004 §4.1, the Umbra B+-tree: slotted pages whose 12-byte slots hold the
// first key bytes, §3.5):
//   [0, 16)    buffer::PageHeader (the buffer manager's: LSN, checksum)
//   16  u16 kind           NodeKind
//   18  u16 count          slots in use
//   20  u32 data_start     lowest record byte; records fill [data_start, page_size)
//   24  u32 fragmented     bytes of dead records inside [data_start, page_size)
//   28  u16 level          0 for leaves, children's level + 1 for inner pages
//   30  u16 tree_bytes     b2tree pages: the bytes of the embedded-tree area below; 0: none
//   32  u64 link           leaf: right sibling (0 = last leaf); inner: the rightmost child;
//                          overflow and free pages: the next page of the chain or list
//   40  embedded-tree area (b2tree pages only, tree_bytes long; seed 004 §3):
//         u16 changes      inserts and erases since the tree was built
//         u16 threshold    the most slots per range the builder aims for
//         the embedded tree (engine/b2tree/embedded_tree.h: nodes and range array)
//   40 + tree_bytes  slots[count]  12 bytes each, sorted by key; two layouts:
//     bptree pages ("narrow", tree_bytes == 0):
//       0 u16 offset   2 u16 key length   4 u16 payload length   6 u16 flags
//       8 u32 head     the first 4 key bytes (big-endian, zero-padded)
//     b2tree pages ("wide", tree_bytes > 0):
//       0 u16 offset   2 u16 payload length (bits 0..14) | kOverflowRecord << 15
//       4 u64 head << 8 | key length: the head is the 7 key bytes after the prefix the slot's
//             range shares as its embedded tree confirms it, its `skip` (big-endian,
//             zero-padded; seed 004's infix); the key length is the low byte
//     (a leaf's inline payload is below 2^15 bytes, its only flag is kOverflowRecord, a key at
//     most 250 bytes: the wide slot drops no information)
//   ... free space ...
//   [data_start, page_size) records: payload bytes, then key bytes
// Keys are 1..250 bytes of any value, ordered bytewise (a prefix sorts first). Inner pages: the
// payload is the 8-byte child reference, and every record starts 8-aligned (its size is rounded
// up to 8), so child references are aligned words the buffer manager can swizzle with a CAS.
// Inner semantics: slot i = (separator s_i, child c_i), c_i holds keys in [s_{i-1}, s_i), the
// link (rightmost child) keys >= s_{count-1}.
// A record dies in place when erased or replaced (fragmented grows), unless it is the lowest
// one; compaction rewrites the records when an insert finds the gap too small but the page has
// room in total.
//
// Thread safety: none here; the caller holds the page's latch (exclusive for NodeWriter).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string_view>

#include "engine/buffer/buffer_types.h"
#include "engine/buffer/page_changes.h"

namespace pmcached::engine::bptree {

using buffer::PageChanges;
using buffer::PageId;

enum class NodeKind : std::uint16_t { kFree = 0, kLeaf = 1, kInner = 2, kOverflow = 3, kMeta = 4 };

inline constexpr std::size_t kMaxKeySize = 250;
inline constexpr std::size_t kSlotSize = 12;
inline constexpr std::size_t kKindOffset = 16;
inline constexpr std::size_t kCountOffset = 18;
inline constexpr std::size_t kDataStartOffset = 20;
inline constexpr std::size_t kFragmentedOffset = 24;
inline constexpr std::size_t kLevelOffset = 28;
inline constexpr std::size_t kTreeBytesOffset = 30;
inline constexpr std::size_t kLinkOffset = 32;
inline constexpr std::size_t kSlotsOffset =
    40;  // the end of the node header: the tree area or slots
inline constexpr std::size_t kTreeHeaderSize = 4;  // changes, threshold
// Key bytes in a slot's head: bptree pages (narrow slots), b2tree pages (wide slots).
inline constexpr std::size_t kNarrowHeadBytes = 4;
inline constexpr std::size_t kWideHeadBytes = 7;

// Slot flags.
inline constexpr std::uint16_t kOverflowRecord = 1;  // the payload is an OverflowRef

// Bytes the slots and records may use.
[[nodiscard]] constexpr std::size_t node_capacity(std::size_t page_size) noexcept {
  return page_size - kSlotsOffset;
}
// A record's bytes in the page: inner records are rounded up to 8.
[[nodiscard]] constexpr std::size_t record_size(bool inner, std::size_t key_size,
                                                std::size_t payload_size) noexcept {
  const std::size_t n = key_size + payload_size;
  return inner ? (n + 7) & ~std::size_t{7} : n;
}
// A slot and its record.
[[nodiscard]] constexpr std::size_t entry_size(bool inner, std::size_t key_size,
                                               std::size_t payload_size) noexcept {
  return kSlotSize + record_size(inner, key_size, payload_size);
}
// The largest inner entry (a 250-byte separator and its child).
inline constexpr std::size_t kMaxInnerEntry = entry_size(true, kMaxKeySize, 8);

// The 4 bytes of `key` from `skip`, big-endian, zero-padded: equal heads leave the order to the
// rest.
[[nodiscard]] inline std::uint32_t key_head(std::string_view key, std::size_t skip = 0) noexcept {
  std::uint32_t head = 0;
  for (std::size_t i = skip; i < skip + 4; ++i) {
    head <<= 8;
    if (i < key.size()) head |= static_cast<unsigned char>(key[i]);
  }
  return head;
}

// The 7 bytes of `key` from `skip` (a wide slot's head), big-endian, zero-padded, in the low 56
// bits.
[[nodiscard]] inline std::uint64_t key_head_wide(std::string_view key, std::size_t skip) noexcept {
  if (key.size() >= skip + 8) {
    std::uint64_t word;
    std::memcpy(&word, key.data() + skip, sizeof word);
    return __builtin_bswap64(word) >> 8;
  }
  std::uint64_t head = 0;
  for (std::size_t i = skip; i < skip + kWideHeadBytes; ++i) {
    head <<= 8;
    if (i < key.size()) head |= static_cast<unsigned char>(key[i]);
  }
  return head;
}

// Asks for every cache line of [data, data + size) at once, so the reads that follow wait for
// them together rather than one miss after another.
inline void prefetch_lines(const void* data, std::size_t size) noexcept {
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  for (std::uintptr_t line = begin & ~std::uintptr_t{63}; line < begin + size; line += 64) {
    __builtin_prefetch(reinterpret_cast<const void*>(line));
  }
}

template <typename T>
[[nodiscard]] inline T load_value(const std::byte* at) noexcept {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

// A slot, decoded from either layout (not its bytes: see the layouts above).
struct Slot {
  std::uint16_t offset;
  std::uint16_t key_size;
  std::uint16_t payload_size;
  std::uint16_t flags;
  std::uint64_t head;  // key_head() on bptree pages, key_head_wide() on b2tree pages
};
// A slot's 12 bytes in the narrow (bptree) or wide (b2tree) layout.
void encode_slot(const Slot& slot, bool wide, std::byte* out) noexcept;
[[nodiscard]] inline Slot decode_slot(const std::byte* at, bool wide) noexcept {
  Slot s;
  s.offset = load_value<std::uint16_t>(at);
  if (!wide) {
    s.key_size = load_value<std::uint16_t>(at + 2);
    s.payload_size = load_value<std::uint16_t>(at + 4);
    s.flags = load_value<std::uint16_t>(at + 6);
    s.head = load_value<std::uint32_t>(at + 8);
    return s;
  }
  const auto payload = load_value<std::uint16_t>(at + 2);
  const auto word = load_value<std::uint64_t>(at + 4);
  s.payload_size = payload & 0x7FFF;
  s.flags = payload >> 15;
  s.key_size = word & 0xFF;
  s.head = word >> 8;
  return s;
}

// Where a key is, or would go, in a page.
struct SearchResult {
  std::size_t index;  // first slot whose key is >= the key (count if none)
  bool found;         // that slot's key equals the key
};

// A read-only view of a leaf or inner page.
class Node {
 public:
  Node(const std::byte* page, std::size_t page_size) noexcept
      : page_(page), page_size_(page_size) {}

  [[nodiscard]] const std::byte* page() const noexcept { return page_; }
  [[nodiscard]] std::size_t page_size() const noexcept { return page_size_; }
  [[nodiscard]] NodeKind kind() const noexcept {
    return static_cast<NodeKind>(load_value<std::uint16_t>(page_ + kKindOffset));
  }
  [[nodiscard]] bool is_leaf() const noexcept { return kind() == NodeKind::kLeaf; }
  [[nodiscard]] bool is_inner() const noexcept { return kind() == NodeKind::kInner; }
  [[nodiscard]] std::size_t count() const noexcept {
    return load_value<std::uint16_t>(page_ + kCountOffset);
  }
  [[nodiscard]] std::size_t data_start() const noexcept {
    return load_value<std::uint32_t>(page_ + kDataStartOffset);
  }
  [[nodiscard]] std::size_t fragmented() const noexcept {
    return load_value<std::uint32_t>(page_ + kFragmentedOffset);
  }
  [[nodiscard]] unsigned level() const noexcept {
    return load_value<std::uint16_t>(page_ + kLevelOffset);
  }
  // b2tree pages: the embedded-tree area's bytes (0: a bptree page, no tree).
  [[nodiscard]] std::size_t tree_bytes() const noexcept {
    return load_value<std::uint16_t>(page_ + kTreeBytesOffset);
  }
  [[nodiscard]] std::size_t slots_offset() const noexcept { return kSlotsOffset + tree_bytes(); }
  // Whether the slots are wide (a b2tree page): see the layouts above.
  [[nodiscard]] bool wide_slots() const noexcept { return tree_bytes() != 0; }
  // The head a slot of this page holds for `key` taken after `skip` bytes.
  [[nodiscard]] std::uint64_t head_of(std::string_view key, std::size_t skip) const noexcept {
    return wide_slots() ? key_head_wide(key, skip) : key_head(key, skip);
  }
  // The embedded tree itself (after the area's header); empty on bptree pages.
  [[nodiscard]] std::span<const std::byte> tree() const noexcept {
    const std::size_t n = tree_bytes();
    return n <= kTreeHeaderSize
               ? std::span<const std::byte>()
               : std::span(page_ + kSlotsOffset + kTreeHeaderSize, n - kTreeHeaderSize);
  }
  [[nodiscard]] unsigned tree_changes() const noexcept {
    return tree_bytes() == 0 ? 0 : load_value<std::uint16_t>(page_ + kSlotsOffset);
  }
  [[nodiscard]] unsigned tree_threshold() const noexcept {
    return tree_bytes() == 0 ? 0 : load_value<std::uint16_t>(page_ + kSlotsOffset + 2);
  }
  // The prefix length slot `i`'s head is taken after (0 on bptree pages).
  [[nodiscard]] std::size_t slot_skip(std::size_t i) const noexcept;
  // Leaf: right sibling; inner: rightmost child (a plain page id only while unswizzled: read
  // children through BufferManager::child_id()).
  [[nodiscard]] std::uint64_t link() const noexcept {
    return load_value<std::uint64_t>(page_ + kLinkOffset);
  }

  // Bytes between the slots and the records.
  [[nodiscard]] std::size_t free_contiguous() const noexcept {
    return data_start() - slots_offset() - kSlotSize * count();
  }
  // Bytes an insert may use after a compaction.
  [[nodiscard]] std::size_t free_total() const noexcept { return free_contiguous() + fragmented(); }
  // Bytes the live slots and records use.
  [[nodiscard]] std::size_t used() const noexcept {
    return node_capacity(page_size_) - free_total();
  }

  [[nodiscard]] Slot slot(std::size_t i) const noexcept {
    return decode_slot(page_ + slots_offset() + kSlotSize * i, wide_slots());
  }
  [[nodiscard]] std::string_view key(std::size_t i) const noexcept {
    const Slot s = slot(i);
    return {reinterpret_cast<const char*>(page_ + s.offset + s.payload_size), s.key_size};
  }
  [[nodiscard]] std::span<const std::byte> payload(std::size_t i) const noexcept {
    const Slot s = slot(i);
    return {page_ + s.offset, s.payload_size};
  }
  [[nodiscard]] std::uint16_t flags(std::size_t i) const noexcept { return slot(i).flags; }
  [[nodiscard]] std::size_t entry_bytes(std::size_t i) const noexcept {
    const Slot s = slot(i);
    return entry_size(is_inner(), s.key_size, s.payload_size);
  }

  // Inner pages: the offset of child reference i (i == count(): the rightmost child). Aligned to 8.
  [[nodiscard]] std::size_t child_offset(std::size_t i) const noexcept {
    return i == count() ? kLinkOffset : slot(i).offset;
  }
  // Inner pages: the child whose range holds `key` (count() for the rightmost).
  [[nodiscard]] std::size_t child_index(std::string_view key) const noexcept;

  // Binary search over the slots (on b2tree pages over the range the embedded tree gives);
  // compares heads first and reads a record only on a tie.
  [[nodiscard]] SearchResult search(std::string_view key) const noexcept;

 private:
  const std::byte* page_;
  std::size_t page_size_;
};

// Changes a page through its PageChanges. The page is latched exclusively by the caller.
class NodeWriter : public Node {
 public:
  explicit NodeWriter(PageChanges& changes) noexcept
      : Node(changes.page(), changes.page_size()), changes_(changes) {}

  [[nodiscard]] PageChanges& changes() const noexcept { return changes_; }

  // Makes the page an empty node of `kind`/`level` (the link is 0), a b2tree page with an
  // (empty) embedded tree if `b2_threshold` > 0.
  void init(NodeKind kind, unsigned level, unsigned b2_threshold = 0) noexcept;
  // b2tree pages: builds the embedded tree anew over the slots and rewrites their heads, within
  // the page's free room (a coarser tree where the room is short). Compacts first if need be.
  void rebuild_tree() noexcept;
  // Makes a bptree page a b2tree page (an embedded tree over its slots); nothing if the page has
  // not the few bytes the tree's header needs.
  void enable_tree(unsigned b2_threshold) noexcept;
  void set_link(std::uint64_t link) noexcept { changes_.store(kLinkOffset, link); }

  // Whether an entry of this size fits, with a compaction if need be.
  [[nodiscard]] bool fits(std::size_t entry_bytes) const noexcept {
    return entry_bytes <= free_total();
  }
  // Inserts a slot at `index` (keeping key order is the caller's part); compacts first if the
  // gap is too small. False (nothing changed) if the entry does not fit at all.
  bool insert(std::size_t index, std::string_view key, std::span<const std::byte> payload,
              std::uint16_t flags = 0) noexcept;
  // Removes slot `index`; its record dies in place.
  void erase(std::size_t index) noexcept;
  // Replaces the payload of slot `index`: in place if the size is the same, else as erase and
  // insert. False (nothing changed) if the new entry does not fit.
  bool replace_payload(std::size_t index, std::span<const std::byte> payload,
                       std::uint16_t flags) noexcept;
  // Overwrites payload bytes [offset, offset + bytes.size()) of slot `index` in place.
  void patch_payload(std::size_t index, std::size_t offset,
                     std::span<const std::byte> bytes) noexcept;
  // Inner pages: sets child reference i (i == count(): the rightmost child) to a page id.
  void set_child(std::size_t i, PageId child) noexcept { changes_.store(child_offset(i), child); }
  // Rewrites the records without the dead ones (logged as the slot run and the record area).
  void compact() noexcept;

 private:
  void set_count(std::size_t n) noexcept {
    changes_.store(kCountOffset, static_cast<std::uint16_t>(n));
  }
  void set_data_start(std::size_t n) noexcept {
    changes_.store(kDataStartOffset, static_cast<std::uint32_t>(n));
  }
  void set_fragmented(std::size_t n) noexcept {
    changes_.store(kFragmentedOffset, static_cast<std::uint32_t>(n));
  }
  // b2tree pages: counts a change; rebuilds the tree when they reach the threshold and
  // `may_rebuild` (after an insert, which has taken its room already).
  void count_tree_change(bool may_rebuild = true) noexcept;

  PageChanges& changes_;
};

// Visits the child references (aligned 8-byte words) of an inner page; nothing for any other
// page. For buffer::BufferOptions::child_slots.
void for_each_child_slot(std::byte* page, const std::function<void(std::uint64_t& slot)>& visit);

// Embedded-tree builds of this process (all b2tree engines in it): how many, the time they took,
// and the trees they made (bytes and ranges summed over the builds, the largest tree).
struct TreeRebuilds {
  std::uint64_t count = 0;
  std::uint64_t nanoseconds = 0;
  std::uint64_t bytes = 0;
  std::uint64_t max_bytes = 0;
  std::uint64_t ranges = 0;
};
[[nodiscard]] TreeRebuilds tree_rebuilds() noexcept;

}  // namespace pmcached::engine::bptree

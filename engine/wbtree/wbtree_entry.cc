// WbTreeEngine: the bitmap entry protocol of seed 002 §2.2 (wB+-Tree with the 8-byte bitmap and
// the slot array order[]), the order[] rebuild of recovery and the truncation of a split node.
//
// Invariant (wbtree_node.h): while the slot array is valid — bit 0 set and order[0..count)
// listing exactly the entries whose bits are set — it is in key order. Every change ends with ONE
// 8-byte bitmap store (persisted) that sets bit 0 together with the new entry bits: a crash
// before it leaves the old bitmap, and recovery re-sorts order[] from it unless the slot array is
// still valid for it; after it, the new state. The header is one cache line, but nothing relies on
// the line reaching PM whole: only the 8-byte bitmap word decides, and the check of order[]
// against it reads each order byte on its own.
#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/wbtree/wbtree_engine.h"

namespace pmcached::engine::wbtree {

void WbTreeEngine::insert_entry(std::uint64_t node, unsigned pos, std::uint64_t word,
                                std::uint64_t child) noexcept {
  NodeHeader* h = header(node);
  const std::uint64_t bitmap = h->bitmap;
  const std::uint64_t free_bits = ~bitmap & entry_mask(h->kind);
  const auto entry = static_cast<unsigned>(__builtin_ctzll(free_bits) - 1);
  // 1. The entry, in a slot no reader and no recovery looks at (its bit is clear).
  if (h->kind == kLeafKind) {
    std::uint64_t* slot = &leaf(node)->entries[entry];
    *slot = word;
    region_->flush(slot, sizeof *slot);
  } else {
    InnerEntry* slot = &inner(node)->entries[entry];
    slot->key_block = word;
    slot->child = child;
    region_->flush(slot, sizeof *slot);
  }
  // 2. The new slot array, bit 0 left set. Any part of it may reach PM before the commit: it
  //    lists `entry`, whose bit is clear, at `pos`, and shifts the old order[pos..) right by one.
  //    Under the old bitmap a mix of old and new order bytes either shows `entry` (count or the
  //    byte at pos new), or repeats a shifted entry (a new byte after an old one), or is the old
  //    array; so recovery finds the slot array invalid and re-sorts it, or finds the old one.
  //    Seed 002's wB+-Tree cleared bit 0 first with a fence of its own; this saves that fence.
  //    One fence for the entry, the slot array and the item record the entry refers to.
  std::memmove(&h->order[pos + 1], &h->order[pos], h->count - pos);
  h->order[pos] = static_cast<std::uint8_t>(entry);
  ++h->count;
  region_->flush(h, sizeof *h);
  region_->fence();
  // 3. The commit: the entry's bit (bit 0 stays set) in one store.
  region_->store_u64_persist(&h->bitmap, bitmap | kValidBit | entry_bit(entry));
  if (h->kind == kInnerKind && word != 0) note_head(node, entry);  // derived: not flushed
}

void WbTreeEngine::erase_entry(std::uint64_t node, unsigned pos) noexcept {
  NodeHeader* h = header(node);
  const std::uint64_t bitmap = h->bitmap;
  const unsigned entry = h->order[pos];
  region_->store_u64_persist(&h->bitmap, bitmap & ~kValidBit);
  std::memmove(&h->order[pos], &h->order[pos + 1], h->count - pos - 1u);
  --h->count;
  h->order[h->count] = 0;
  region_->persist(h, sizeof *h);
  region_->store_u64_persist(&h->bitmap, (bitmap & ~entry_bit(entry)) | kValidBit);
}

void WbTreeEngine::rebuild_order(std::uint64_t node) {
  NodeHeader* h = header(node);
  // Only an insert rewrites order[] with bit 0 set (its torn states are proven harmless in
  // tests/wbtree/wbtree_slot_array_test.cc); every other rewrite, this one included, clears it
  // first, so that whatever a crash leaves of the rewrite is invalid until the final store.
  if ((h->bitmap & kValidBit) != 0) region_->store_u64_persist(&h->bitmap, h->bitmap & ~kValidBit);
  std::vector<unsigned> entries;
  for (unsigned e = 0; e < fanout_of(h->kind); ++e) {
    if ((h->bitmap & entry_bit(e)) != 0) entries.push_back(e);
  }
  std::vector<std::string_view> keys(fanout_of(h->kind));
  for (unsigned e : entries) keys[e] = entry_key(node, e);
  const bool inner_node = h->kind == kInnerKind;
  std::sort(entries.begin(), entries.end(), [&](unsigned a, unsigned b) {
    if (inner_node) {  // the keyless entry (key block 0) is minus infinity
      const bool a_first = inner(node)->entries[a].key_block == 0;
      const bool b_first = inner(node)->entries[b].key_block == 0;
      if (a_first != b_first) return a_first;
    }
    return keys[a] < keys[b];
  });
  std::memset(h->order, 0, sizeof h->order);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    h->order[i] = static_cast<std::uint8_t>(entries[i]);
  }
  h->count = static_cast<std::uint8_t>(entries.size());
  region_->persist(h, sizeof *h);
  region_->store_u64_persist(&h->bitmap, h->bitmap | kValidBit);
}

void WbTreeEngine::truncate_below(std::uint64_t node, std::string_view bound) {
  NodeHeader* h = header(node);
  const bool inner_node = h->kind == kInnerKind;
  unsigned kept = 0;
  std::uint64_t kept_bits = 0;
  while (kept < h->count) {
    const unsigned entry = h->order[kept];
    const bool keyless = inner_node && inner(node)->entries[entry].key_block == 0;
    if (!keyless && entry_key(node, entry) >= bound) break;
    kept_bits |= entry_bit(entry);
    ++kept;
  }
  if (kept == h->count && (h->bitmap & entry_mask(h->kind)) == kept_bits) return;  // done
  region_->store_u64_persist(&h->bitmap, h->bitmap & ~kValidBit);
  h->count = static_cast<std::uint8_t>(kept);
  std::memset(&h->order[kept], 0, sizeof h->order - kept);
  region_->persist(h, sizeof *h);
  region_->store_u64_persist(&h->bitmap, kept_bits | kValidBit);
}

std::uint64_t WbTreeEngine::clear_first_key(std::uint64_t node) noexcept {
  InnerEntry& first = inner(node)->entries[header(node)->order[0]];
  const std::uint64_t key_block = first.key_block;
  if (key_block != 0) region_->store_u64_persist(&first.key_block, 0);
  return key_block;
}

}  // namespace pmcached::engine::wbtree

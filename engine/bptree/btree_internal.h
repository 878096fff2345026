// What the BTree's source files share (not part of the interface): the pages a write holds, and
// building a node from a list of entries into a scratch page.
//
// Thread safety: a WriteContext belongs to the thread of one write.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string_view>
#include <vector>

#include "engine/bptree/btree.h"

namespace pmcached::engine::bptree {

// A page a write holds exclusively: first by its guard, then (once changed) by the transaction.
struct BTree::Held {
  PageGuard guard;
  PageChanges* changes = nullptr;
  PageId id = buffer::kNoPage;
  std::byte* data = nullptr;
  std::size_t index = 0;  // the child position the write's key takes in this page (inner pages)
  // Upserts: the first / last page of its level (the descent took the first / last child at
  // every level above it). Only where a split leans depends on them (split_direction()).
  bool leftmost = false;
  bool rightmost = false;

  Held() = default;
  explicit Held(PageGuard g) : guard(std::move(g)), id(guard.id()), data(guard.data()) {}
  [[nodiscard]] explicit operator bool() const noexcept { return data != nullptr; }
  [[nodiscard]] Node node(std::size_t page_size) const noexcept { return Node(data, page_size); }
};

struct BTree::WriteContext {
  explicit WriteContext(MiniTransaction& t) : txn(t) {}
  MiniTransaction& txn;
  // The pessimistic path: from the highest page a change may reach (the root, or a safe page)
  // down to the leaf.
  std::vector<Held> path;
  // Erases: the sibling a merge of path[i] would use (empty if none), and whether it is left.
  std::vector<Held> siblings;
  std::vector<bool> sibling_left;
  bool top_is_root = false;
  PageChanges* meta = nullptr;
};

// One slot's contents, pointing into a page or the caller's memory.
struct Entry {
  std::string_view key;
  std::span<const std::byte> payload;
  std::uint16_t flags = 0;
};

// A page change the tree's room accounting guaranteed (an insert that must fit): if it ever
// fails, the process stops before the transaction commits, so nothing half-done becomes durable,
// rather than losing a record silently in a release build.
inline void must(bool ok, const char* what) noexcept {
  if (ok) return;
  std::fprintf(stderr, "bptree: %s did not fit its page; stopping before the change commits\n",
               what);
  std::abort();
}

// A zeroed, 8-aligned scratch page.
class ScratchPage {
 public:
  explicit ScratchPage(std::size_t page_size) : words_(page_size / 8, 0), size_(page_size) {}
  [[nodiscard]] std::byte* data() noexcept { return reinterpret_cast<std::byte*>(words_.data()); }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  std::vector<std::uint64_t> words_;
  std::size_t size_;
};

// Builds a node of `kind`/`level` holding `entries` (in key order) and `link` into `scratch`,
// with an embedded tree if `b2_threshold` > 0 (a b2tree page).
void build_node(ScratchPage& scratch, NodeKind kind, unsigned level, std::span<const Entry> entries,
                std::uint64_t link, unsigned b2_threshold);
// Copies a built node over a page held by the transaction; the page is logged whole.
void install_node(PageChanges& page, ScratchPage& scratch);
// The entries of a page (views into it).
[[nodiscard]] std::vector<Entry> entries_of(const Node& node);

// The 8 bytes of a child reference, for an inner Entry's payload.
[[nodiscard]] inline std::span<const std::byte> child_bytes(const PageId& id) noexcept {
  return {reinterpret_cast<const std::byte*>(&id), sizeof id};
}

}  // namespace pmcached::engine::bptree

// BTree: the bptree engine's B+-tree over the buffer manager (seed 004 §4.1's baseline): records
// in slotted leaf pages (node.h), large ones in overflow chains (overflow.h), the roots in the
// meta page (meta_page.h). The engine glue (RecordEngine, commit, recovery, checkpoints) calls
// this class; every page a write changes goes into the caller's MiniTransaction, which logs it.
//
// Latch protocol (deadlock freedom):
//   - Tree pages are latched top-down (parent before child) and, on one level, left before
//     right; the meta page is latched last, after every tree page of the operation, and a holder
//     of the meta page latches only pages no tree operation can reach (free-list pages, new pages,
//     the overflow chain of a record whose leaf it holds exclusively).
//   - Reads go down without latches or pins first (seed 004 §3.6; the buffer manager's
//     optimistic reads): each page's version is validated after the next page's was read, the
//     leaf's after the record was copied out. A read that a writer gets in the way of, that
//     meets a page not resident or a record in an overflow chain, starts again with latches:
//     shared latch coupling down to the leaf. Either way the root is found through an in-memory
//     root id, checked after its page is latched or its version read (a root split or collapse
//     changes the id while holding the old root exclusively, so a stale id is always noticed).
//   - Writes first descend optimistically: shared latches on inner pages, exclusive on the leaf.
//     Most writes end there (a leaf that takes the change without a split, or loses a record
//     without underflowing), so writers on different leaves run in parallel and inner pages are
//     never latched exclusively. Otherwise the write releases everything and descends again
//     pessimistically: exclusive coupling from the root, releasing the ancestors above a node
//     that is safe (an insert: the node has room for one more largest separator; an erase: it
//     stays above a quarter full after losing its largest entry) and, for erases, latching the
//     sibling a merge would use (left sibling before the node, right sibling after it).
//     Writers latch their inner pages shared rather than reading them optimistically: a writer
//     holds the leaf exclusively anyway, and what optimism saves (four locked instructions per
//     page, docs/B2TREE.md) was measured for reads only.
//     Pessimistic descents unswizzle the children of each page they latch exclusively, so the
//     pool can still evict those children meanwhile (see hold_exclusive()).
//   - Scans re-descend from the last key they visited for every leaf (see scan()), holding no
//     latch while they call the visitor (which may call the tree); when a leaf has nothing past
//     the key they move to its right sibling with coupling (left before right, as above).
//     Following sibling links without a latch between leaves would not be safe: the right
//     sibling may be merged away and its page reused meanwhile.
//
// Thread safety: every method may be called from any thread, concurrently, except format(),
// load() and check(), which need the tree to be quiescent. One MiniTransaction carries at most
// one modifying call: call finish() before the next.
// Durability: none here: the caller's MiniTransaction logs the pages, and the changes are durable
// once its LSN is committed. A modifying call either changes its pages consistently or (kFull)
// changes nothing.
// Memory: a write keeps up to about 2 x height + 4 pages fixed, plus the pages of an overflow
// chain it writes (a record of N bytes: N / page size pages), until finish().
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/bptree/meta_page.h"
#include "engine/bptree/node.h"
#include "engine/bptree/overflow.h"
#include "engine/buffer/buffer_manager.h"
#include "engine/buffer/mini_transaction.h"
#include "engine/index_engine.h"
#include "engine/record_engine.h"

namespace pmcached::engine::bptree {

using buffer::BufferManager;
using buffer::LatchMode;
using buffer::MiniTransaction;
using buffer::PageGuard;

struct BTreeStats {
  std::uint64_t height = 0;  // levels, leaves included
  std::uint64_t splits = 0;
  std::uint64_t edge_splits = 0;  // of those, leaning to an edge of a level (separator.h)
  std::uint64_t merges = 0;
  std::uint64_t borrows = 0;
  std::uint64_t root_splits = 0;
  std::uint64_t pessimistic_writes = 0;  // writes that had to descend again exclusively
  // Reads that could not finish optimistically (a writer got in the way, a page was not
  // resident, the record is in an overflow chain) and descended again with latches.
  std::uint64_t latched_reads = 0;
  std::uint64_t overflow_records_written = 0;
};

class BTree {
 public:
  // Visits keys with the first bytes of their records (scan()).
  using ScanVisitor =
      std::function<bool(std::string_view key, std::span<const std::byte> record_head)>;

  // `b2_threshold` > 0: a B2-tree (seed 004): every leaf and inner page it builds carries an
  // embedded tree with ranges of about that many slots. 0: a plain B+-tree.
  explicit BTree(BufferManager& buffers, unsigned b2_threshold = 0);
  BTree(const BTree&) = delete;
  BTree& operator=(const BTree&) = delete;

  // True if page 1 of the buffer manager's file is a bptree meta page.
  [[nodiscard]] static bool formatted(BufferManager& buffers);
  // A new page file (no engine pages yet): writes the meta page and an empty root leaf into `txn`.
  void format(MiniTransaction& txn);
  // Reads the roots from the meta page (after format() or after the log was replayed). Throws
  // std::runtime_error if page 1 is not a bptree meta page.
  void load();

  // Copies the first min(`limit`, size) bytes of the record of `key` into `out`; false if absent.
  // An overflow record's first kOverflowPrefix bytes are in its leaf: a head that short reads
  // no page of the chain.
  [[nodiscard]] bool read(std::string_view key, RecordBuffer& out,
                          std::size_t limit = SIZE_MAX) const;
  // Inserts or replaces. Keys are 1..kMaxKeySize bytes. kFull: the page file has no room for
  // the pages the write may need; nothing changed.
  [[nodiscard]] WriteStatus upsert(MiniTransaction& txn, std::string_view key,
                                   std::span<const std::byte> record);
  // Removes `key`; false if absent (nothing changed).
  bool erase(MiniTransaction& txn, std::string_view key);
  // Overwrites bytes [offset, offset + bytes.size()) of the record of `key` in place; false if
  // absent or if the range passes the record's end (nothing changed).
  bool patch(MiniTransaction& txn, std::string_view key, std::size_t offset,
             std::span<const std::byte> bytes);
  // Visits keys >= `from` in order, with the first min(`prefix`, size) bytes of each record,
  // until `visit` returns false. Each leaf's entries are copied out and the leaf released before
  // they are visited; the next leaf is found by descending again from the last key visited, so a
  // split or merge between two leaves never makes the scan skip or repeat a key (a key present
  // for the whole scan is visited exactly once; one inserted or erased meanwhile may or may not
  // be). Views are valid only during the call.
  void scan(std::string_view from, std::size_t prefix, const ScanVisitor& visit) const;

  [[nodiscard]] std::size_t size() const noexcept { return items_.load(std::memory_order_relaxed); }
  [[nodiscard]] PageId root() const noexcept { return root_.load(std::memory_order_acquire); }
  [[nodiscard]] BTreeStats stats() const noexcept;
  // The meta page's fields (latched shared; for stats and tests).
  [[nodiscard]] MetaFields meta() const;

  // Structural invariants: page kinds and levels, key order inside pages and against the
  // separators above them (fences), record bounds, leaf sibling links, overflow chains, the
  // free list, that every page below the high-water mark is used exactly once, and the item
  // count. Returns "" if all hold, else the first violation. Quiescent tree only.
  [[nodiscard]] std::string check() const;

  // b2tree: the embedded trees of every leaf and inner page now (a walk of the whole tree with
  // shared latch coupling: it reads every page, so callers use it when the pages are resident).
  struct TreeShapes {
    std::size_t pages = 0;
    std::size_t bytes = 0;  // summed over the pages: the tree area (header included)
    std::size_t max_bytes = 0;
    std::size_t ranges = 0;  // summed
  };
  [[nodiscard]] TreeShapes tree_shapes() const;

 private:
  struct Held;
  struct WriteContext;

  // Fixes the root, latched `leaf_mode` if it is a leaf and `inner_mode` otherwise.
  PageGuard fix_root(LatchMode leaf_mode, LatchMode inner_mode) const;
  // Pessimistic descents: `page` (latched exclusively) with its children unswizzled, so that the
  // pool may evict them while it is held (an evictor needs the parent's latch, shared, to take a
  // victim's tagged reference out of it).
  PageGuard hold_exclusive(PageGuard page);
  // read() without latches or pins (the buffer manager's optimistic reads): true or false as
  // read(), nullopt if it has to be done with latches.
  std::optional<bool> read_optimistic(std::string_view key, RecordBuffer& out,
                                      std::size_t limit) const;
  // Shared coupling down to the leaf for `key`, latched `leaf_mode`.
  PageGuard descend(std::string_view key, LatchMode leaf_mode) const;
  // Copies bytes [offset, offset + n) of the record in slot `index` of `leaf` into `out`.
  void copy_record(const std::byte* leaf, std::size_t index, std::size_t offset, std::size_t n,
                   std::byte* out) const;

  WriteStatus upsert_optimistic(MiniTransaction& txn, std::string_view key,
                                std::span<const std::byte> record, bool& done);
  WriteStatus upsert_pessimistic(MiniTransaction& txn, std::string_view key,
                                 std::span<const std::byte> record);
  int erase_optimistic(MiniTransaction& txn, std::string_view key);
  bool erase_pessimistic(MiniTransaction& txn, std::string_view key);

  // Splits the leaf at the bottom of `w`'s path so that it takes the entry for `key`: in the
  // middle, or leaning to the edge of the level (separator.h, split_direction()).
  void split_leaf(WriteContext& w, std::string_view key, std::span<const std::byte> payload,
                  std::uint16_t flags);
  // Inserts separator `sep` for `left` at child position `j` of path level `level` and
  // redirects the reference at `j` to `right`; splits upwards as needed (as split_leaf leans).
  void insert_separator(WriteContext& w, std::size_t level, std::size_t j, std::string_view sep,
                        PageId left, PageId right);
  // A new root above the old one, which split into `left` and `right` at `sep`.
  void grow_root(WriteContext& w, std::string_view sep, PageId left, PageId right,
                 unsigned child_level);
  // Merges or rebalances the underflowing node at path level `level` with its sibling.
  void rebalance(WriteContext& w, std::size_t level);
  // The root has one child left: that child becomes the root.
  void collapse_root(WriteContext& w);

  // Page allocation through the meta page (latched last, held by `w`).
  PageChanges& meta_changes(WriteContext& w);
  [[nodiscard]] bool reserve(WriteContext& w, std::size_t pages);
  PageChanges& allocate(WriteContext& w);
  void free_page(WriteContext& w, PageChanges& page);
  void add_items(WriteContext& w, std::int64_t delta);
  // Writes `record`'s overflow chain and fills `ref` (kOverflowRefSize bytes) for the leaf.
  void write_overflow(WriteContext& w, std::span<const std::byte> record, std::byte* ref);
  void free_overflow(WriteContext& w, std::span<const std::byte> ref);
  [[nodiscard]] bool patch_overflow(MiniTransaction& txn, PageChanges& leaf, std::size_t index,
                                    std::size_t offset, std::span<const std::byte> bytes);

  // Tracks a held page in the transaction (unswizzling an inner page's children first).
  PageChanges& modify(WriteContext& w, Held& held);
  void set_root(PageId id, unsigned level);

  struct CheckState;
  std::string check_node(CheckState& state, PageId id, unsigned level, const std::string* low,
                         const std::string* high, bool is_root, bool only_child) const;
  std::string check_chain(CheckState& state, std::span<const std::byte> ref) const;

  BufferManager& buffers_;
  const std::size_t page_size_;
  const unsigned b2_threshold_;  // 0: plain B+-tree pages
  std::atomic<PageId> root_{buffer::kNoPage};
  std::atomic<unsigned> root_level_{0};  // a hint: the root's page says what it is
  std::atomic<std::uint64_t> items_{0};

  mutable std::atomic<std::uint64_t> splits_{0};
  mutable std::atomic<std::uint64_t> edge_splits_{0};
  mutable std::atomic<std::uint64_t> merges_{0};
  mutable std::atomic<std::uint64_t> borrows_{0};
  mutable std::atomic<std::uint64_t> root_splits_{0};
  mutable std::atomic<std::uint64_t> pessimistic_{0};
  mutable std::atomic<std::uint64_t> latched_reads_{0};
  mutable std::atomic<std::uint64_t> overflow_written_{0};
};

}  // namespace pmcached::engine::bptree

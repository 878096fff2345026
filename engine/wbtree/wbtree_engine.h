// WbTreeEngine: the class behind make_wbtree_engine() (private to engine/wbtree). The design and
// the persist orders are in wbtree_factory.h, the node layout in wbtree_node.h.
//
// Files: wbtree_engine.cc (construction, node access, lookup, scan, figures, block walk),
// wbtree_entry.cc (the bitmap entry protocol, order[] rebuild, truncation), wbtree_insert.cc
// (upsert, the splitting descent), wbtree_split.cc (split with the redo log), wbtree_erase.cc
// (erase, unlink, root collapse), wbtree_recover.cc (validation, log replay, repair).
//
// Thread safety: see wbtree_factory.h. Private helpers assume the caller holds mutex_ (shared for
// the const ones, exclusive for those that write).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "engine/btree/btree_engine.h"
#include "engine/btree/key_tag.h"
#include "engine/wbtree/wbtree_node.h"

namespace pmcached::engine::wbtree {

using btree::Meta;

class WbTreeEngine final : public btree::BTreeEngine {
 public:
  explicit WbTreeEngine(const EngineContext& context);

  [[nodiscard]] std::string_view name() const noexcept override;
  [[nodiscard]] ItemRef lookup(std::string_view key) const noexcept override;
  [[nodiscard]] UpsertResult upsert(std::string_view key, ItemRef ref) noexcept override;
  [[nodiscard]] ItemRef erase(std::string_view key) noexcept override;
  void scan(std::string_view from,
            const std::function<bool(std::string_view key, ItemRef ref)>& visit) const override;
  void recover() override;
  [[nodiscard]] std::vector<ItemRef> drop_corrupt(const std::vector<ItemRef>& corrupt) override;

 protected:
  void visit_blocks(const std::function<void(std::uint64_t offset)>& visit) const override;
  btree::TreeFigures figures() const override;
  void extra_stats(std::vector<EngineStat>& out) const override;

 private:
  // One inner node on a descent and the order[] position of the child taken.
  struct Step {
    std::uint64_t node;
    unsigned pos;
  };

  // --- access (wbtree_engine.cc) ---
  [[nodiscard]] NodeHeader* header(std::uint64_t node) const noexcept {
    return at<NodeHeader>(node);
  }
  [[nodiscard]] Leaf* leaf(std::uint64_t node) const noexcept { return at<Leaf>(node); }
  [[nodiscard]] Inner* inner(std::uint64_t node) const noexcept { return at<Inner>(node); }
  [[nodiscard]] bool is_leaf(std::uint64_t node) const noexcept {
    return header(node)->kind == kLeafKind;
  }
  [[nodiscard]] bool full(std::uint64_t node) const noexcept {
    return header(node)->count >= fanout_of(header(node)->kind);
  }
  [[nodiscard]] std::uint64_t root() const noexcept;  // 0: no tree
  [[nodiscard]] std::string_view block_key(std::uint64_t key_block) const noexcept;
  // The key of entry `entry` (an index, not an order position); inner: "" for no key block.
  [[nodiscard]] std::string_view entry_key(std::uint64_t node, unsigned entry) const;
  [[nodiscard]] std::uint64_t child_at(std::uint64_t node, unsigned pos) const noexcept {
    return inner(node)->entries[header(node)->order[pos]].child;
  }
  // Inner: the order position of the child whose range holds `key`.
  [[nodiscard]] unsigned child_pos(std::uint64_t node, std::string_view key) const;
  // Inner: recomputes the key heads from the keys of order positions [1, count) (the slot array
  // is valid; position 0 is the keyless entry).
  void refresh_heads(std::uint64_t node) noexcept;
  // Inner: brings the key heads up to date with in-use entry `entry`, just inserted (keyed).
  void note_head(std::uint64_t node, unsigned entry) noexcept;
  // Leaf: the item reference of entry `entry` (an index; the entry word less its tag).
  [[nodiscard]] ItemRef ref_at(std::uint64_t node, unsigned entry) const noexcept {
    return btree::ref_of(leaf(node)->entries[entry]);
  }
  // Leaf: the first order position whose key is >= `key` (a binary search: reads keys).
  [[nodiscard]] unsigned lower_bound(std::uint64_t node, std::string_view key) const;
  // Leaf: the in-use entry (an index) holding `key`, whose tag is `tag` (btree::key_tag(key)),
  // or kLeafFanout. Compares every entry's tag (branch-free), then reads the key of each in-use
  // entry whose tag matches.
  [[nodiscard]] unsigned find_entry(std::uint64_t node, std::string_view key,
                                    std::uint64_t tag) const;
  // The order position of in-use entry `entry` (bit 0 set).
  [[nodiscard]] unsigned position_of(std::uint64_t node, unsigned entry) const noexcept;
  // Descends to the leaf for `key`, recording the inner nodes on the way (if `path`).
  [[nodiscard]] std::uint64_t find_leaf(std::string_view key, std::vector<Step>* path) const;
  [[nodiscard]] std::uint64_t new_key_block(std::string_view key) noexcept;
  // Frees a node that is no longer reachable, with the key blocks of its entries.
  void free_node(std::uint64_t node) noexcept;
  enum class BlockType : unsigned { kLeaf = 0, kInner = 1, kKey = 2 };
  // Every node and key block of the tree, each once (nodes in depth-first key order).
  void walk(const std::function<void(std::uint64_t offset, BlockType type)>& visit) const;
  // The leaf below `node` holding `ref` (0 if none), the inner nodes on the way in `path` and
  // the entry (an index) in `entry`: a walk by position, reading no key.
  [[nodiscard]] std::uint64_t find_ref(std::uint64_t node, ItemRef ref, std::vector<Step>& path,
                                       unsigned& entry) const noexcept;
  bool scan_node(std::uint64_t node, std::string_view from,
                 const std::function<bool(std::string_view key, ItemRef ref)>& visit) const;
  [[nodiscard]] std::size_t height() const noexcept;  // nodes on a root-to-leaf path

  // --- the entry protocol (wbtree_entry.cc) ---
  // Inserts an entry at order position `pos` (leaf: `word` = btree::tagged(ref, tag); inner:
  // `word` = key block, `child`). The node has room and bit 0 set.
  void insert_entry(std::uint64_t node, unsigned pos, std::uint64_t word,
                    std::uint64_t child = 0) noexcept;
  void erase_entry(std::uint64_t node, unsigned pos) noexcept;
  // Re-sorts order[] from the bitmap (the slot array is not valid), then sets bit 0.
  void rebuild_order(std::uint64_t node);
  // Keeps only the entries whose keys are < `bound` (inner: the keyless one counts as lowest);
  // idempotent. Bit 0 must be set.
  void truncate_below(std::uint64_t node, std::string_view bound);
  // An inner node's first entry loses its key block (one store); returns the block or 0.
  std::uint64_t clear_first_key(std::uint64_t node) noexcept;

  // --- insert (wbtree_insert.cc, wbtree_split.cc) ---
  // `entry` is the new leaf entry word, btree::tagged(ref, key_tag(key)).
  UpsertResult insert_first(Meta* meta, std::uint64_t entry) noexcept;
  UpsertResult insert_splitting(std::string_view key, std::uint64_t entry) noexcept;
  // Splits full node `node` (child at order position `parent_pos` of `parent`; parent 0: the
  // root). False when the heap is full (nothing changed).
  [[nodiscard]] bool split(std::uint64_t node, std::uint64_t parent, unsigned parent_pos) noexcept;
  void clear_log(Meta* meta) noexcept;

  // --- erase (wbtree_erase.cc) ---
  void unlink(const std::vector<Step>& path, std::uint64_t leaf_node) noexcept;
  // While the root is an inner node with one child, the child becomes the root. With `free`,
  // the old roots are freed (not during recovery).
  void collapse_root(bool free) noexcept;

  // --- recovery (wbtree_recover.cc) ---
  // Throws "pool is corrupt" for a node recovery cannot repair; returns whether its slot array
  // is valid (wbtree_node.h).
  bool check_node(std::uint64_t node, const char* what) const;
  void check_key_block(std::uint64_t key_block) const;
  void ensure_order(std::uint64_t node);  // check_node, then rebuild_order unless valid
  void replay_log(Meta* meta);
  [[nodiscard]] std::size_t repair_walk();  // returns the number of keys

  std::atomic<std::uint64_t> leaf_splits_{0};
  std::atomic<std::uint64_t> inner_splits_{0};
  std::atomic<std::uint64_t> root_splits_{0};
  std::atomic<std::uint64_t> log_replays_{0};
};

}  // namespace pmcached::engine::wbtree

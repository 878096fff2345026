// The wbtree invariants checker. See wbtree_inspect.h.
#include "tests/wbtree/wbtree_inspect.h"

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/btree/btree_engine.h"
#include "engine/btree/key_heads.h"
#include "engine/btree/key_tag.h"
#include "engine/pm/pool.h"
#include "engine/wbtree/wbtree_node.h"

namespace pmcached::engine::wbtree::testing {
namespace {

using ::pmcached::engine::testing::item_key;
using ::pmcached::engine::testing::TreeReport;

constexpr std::size_t kMaxDepth = 64;

class Inspector {
 public:
  Inspector(const pm::PmRegion& region, TreeReport& report, KeyHeads heads)
      : region_(region), report_(report), heads_(heads) {}

  void meta(std::uint64_t offset) {
    if (!fits(offset, sizeof(btree::Meta), "meta block")) return;
    report_.nodes.emplace_back(offset, sizeof(btree::Meta));
    seen_.insert(offset);
    const auto* m = region_.at<btree::Meta>(offset);
    if (m->magic != kMetaMagic) problem(offset, "meta block without the WBTREE04 magic");
    for (std::uint64_t word : m->log) {
      if (word != 0) problem(offset, "split log not clear");
    }
    if (m->root != 0) node(m->root, 1, std::nullopt, std::nullopt, /*is_root=*/true);
  }

 private:
  void problem(std::uint64_t offset, const std::string& what) {
    report_.problems.push_back("wbtree block " + std::to_string(offset) + ": " + what);
  }
  bool fits(std::uint64_t offset, std::size_t bytes, const char* what) {
    if (offset < pm::kSuperblockSize || offset % 8 != 0 || offset > region_.size() ||
        bytes > region_.size() - offset) {
      problem(offset, std::string(what) + " outside the heap or misaligned");
      return false;
    }
    if (!seen_.insert(offset).second) {
      problem(offset, std::string(what) + " reached twice");
      return false;
    }
    return true;
  }
  std::optional<std::string_view> key_block(std::uint64_t offset) {
    if (!fits(offset, 1, "key block")) return std::nullopt;
    const auto* p = region_.at<unsigned char>(offset);
    if (offset + 1u + p[0] > region_.size()) {
      problem(offset, "key block runs past the region");
      return std::nullopt;
    }
    report_.nodes.emplace_back(offset, 1u + p[0]);
    return std::string_view(reinterpret_cast<const char*>(p + 1), p[0]);
  }
  // A node whose keys must lie in [lo, hi) (nullopt: unbounded).
  void node(std::uint64_t offset, std::size_t depth, std::optional<std::string> lo,
            std::optional<std::string> hi, bool is_root) {
    if (depth > kMaxDepth) return problem(offset, "deeper than any B-tree of this heap");
    if (offset + sizeof(NodeHeader) > region_.size() || offset < pm::kSuperblockSize) {
      return problem(offset, "node outside the heap");
    }
    const auto* h = region_.at<NodeHeader>(offset);
    if (h->kind != kLeafKind && h->kind != kInnerKind) return problem(offset, "no node kind");
    const std::size_t bytes = node_size_of(h->kind);
    if (!fits(offset, bytes, "node")) return;
    report_.nodes.emplace_back(offset, bytes);
    const bool is_leaf = h->kind == kLeafKind;
    const unsigned fanout = fanout_of(h->kind);
    if ((h->bitmap & kValidBit) == 0) problem(offset, "bit 0 (slot array valid) clear");
    if ((h->bitmap & ~(entry_mask(h->kind) | kValidBit)) != 0) {
      problem(offset, "bitmap bits past the entries");
    }
    const auto in_use =
        static_cast<unsigned>(__builtin_popcountll(h->bitmap & entry_mask(h->kind)));
    if (h->count != in_use) problem(offset, "count != popcount(bitmap)");
    if (h->count > fanout) return problem(offset, "count past the fan-out");
    std::set<unsigned> listed;
    for (unsigned pos = 0; pos < h->count; ++pos) {
      const unsigned e = h->order[pos];
      if (e >= fanout || (h->bitmap & entry_bit(e)) == 0 || !listed.insert(e).second) {
        return problem(offset, "order[] is not a permutation of the bitmap's entries");
      }
    }
    if (h->count == 0 && !(is_root && is_leaf)) {
      problem(offset, "empty node that is not a root leaf");
    }
    if (is_root && !is_leaf && h->count == 1) problem(offset, "inner root with one child");

    if (is_leaf) {
      if (leaf_depth_ == 0) leaf_depth_ = depth;
      if (depth != leaf_depth_) problem(offset, "leaf not at the depth of the other leaves");
      const auto* n = region_.at<Leaf>(offset);
      std::optional<std::string> previous;
      for (unsigned pos = 0; pos < h->count; ++pos) {
        const std::uint64_t word = n->entries[h->order[pos]];
        const ItemRef ref = btree::ref_of(word);
        if ((word & ~(btree::kRefMask | btree::kTagMask)) != 0) {
          problem(offset, "leaf entry with bits past its tag");
        }
        if (ref < pm::kSuperblockSize || ref % 8 != 0 || ref >= region_.size()) {
          problem(offset, "leaf entry without an item");
          continue;
        }
        const std::string key(item_key(region_, ref));
        if (btree::tag_of(word) != btree::key_tag(key)) {
          problem(offset, "leaf entry whose key tag does not match its key");
        }
        if (previous && key <= *previous) problem(offset, "leaf keys not strictly ascending");
        if ((lo && key < *lo) || (hi && key >= *hi)) problem(offset, "key outside its separators");
        report_.leaves.emplace_back(key, ref);
        previous = key;
      }
      return;
    }
    const auto* n = region_.at<Inner>(offset);
    std::vector<std::optional<std::string>> keys(h->count);
    for (unsigned pos = 0; pos < h->count; ++pos) {
      const InnerEntry& e = n->entries[h->order[pos]];
      if (pos == 0) {
        if (e.key_block != 0) problem(offset, "first inner entry has a key block");
        continue;
      }
      if (e.key_block == 0) {
        problem(offset, "keyless inner entry that is not the first");
        continue;
      }
      if (const auto key = key_block(e.key_block)) keys[pos] = std::string(*key);
      if (!keys[pos]) continue;
      if (heads_ == KeyHeads::kCheck) {
        if (n->prefix.len > btree::kMaxPrefix || !keys[pos]->starts_with(n->prefix.view())) {
          problem(offset, "separator without the node's key prefix");
        } else if (n->heads[h->order[pos]] != btree::head_after(*keys[pos], n->prefix.len)) {
          problem(offset, "separator whose key head does not match its key");
        }
      }
      if (pos > 1 && keys[pos - 1] && *keys[pos] <= *keys[pos - 1]) {
        problem(offset, "separators not strictly ascending");
      }
      if ((lo && *keys[pos] <= *lo) || (hi && *keys[pos] >= *hi)) {
        problem(offset, "separator outside its parent's range");
      }
    }
    for (unsigned pos = 0; pos < h->count; ++pos) {
      const std::optional<std::string> child_lo = pos == 0 ? lo : keys[pos];
      const std::optional<std::string> child_hi = pos + 1 < h->count ? keys[pos + 1] : hi;
      node(n->entries[h->order[pos]].child, depth + 1, child_lo, child_hi, false);
    }
  }

  const pm::PmRegion& region_;
  TreeReport& report_;
  const KeyHeads heads_;
  std::set<std::uint64_t> seen_;
  std::size_t leaf_depth_ = 0;
};

}  // namespace

TreeReport inspect_wbtree(const pm::PmRegion& region, std::uint64_t pool_root, KeyHeads heads) {
  TreeReport report;
  if (pool_root != 0) Inspector(region, report, heads).meta(pool_root);
  return report;
}

}  // namespace pmcached::engine::wbtree::testing

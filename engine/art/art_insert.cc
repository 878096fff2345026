// ArtEngine::upsert: insert into an END slot or as a new child (in place or by a copy into the
// next node type), leaf collision (push down), prefix split and replace. Every path allocates
// before it writes anything reachable, so an allocation failure changes nothing; every path ends
// with one atomic store that is persisted.
#include <array>
#include <mutex>
#include <utility>

#include "engine/art/art_engine.h"
#include "engine/pm/persistence.h"
#include "engine/radix/radix_tree.h"

namespace pmcached::engine::art {
namespace {

[[nodiscard]] NodeType larger(NodeType type) noexcept {
  return type == NodeType::kN4    ? NodeType::kN16
         : type == NodeType::kN16 ? NodeType::kN48
                                  : NodeType::kN256;
}

constexpr UpsertResult kInserted{UpsertStatus::kInserted, kNoItem};
constexpr UpsertResult kOutOfMemory{UpsertStatus::kOutOfMemory, kNoItem};

}  // namespace

UpsertResult ArtEngine::upsert_locked(std::string_view key, ItemRef ref) noexcept {
  pm::OpScope scope(pm::OpKind::kInsert);
  const std::uint64_t leaf = radix::leaf_ref(ref);
  if (root() == 0) return insert_first(key, leaf);

  std::uint64_t* slot = root_field_;
  std::uint64_t node = root();
  std::uint32_t path = 0;  // the depth the path implies for `node`
  for (;;) {
    const Header h = radix::checked_header(nodes_, node, path);
    if (h.prefix_len > 0) {
      const std::uint32_t mismatch = radix::prefix_mismatch(nodes_, node, h, key);
      if (mismatch < h.prefix_len) return split(slot, node, h, key, leaf, mismatch);
    }
    const std::uint32_t branch = h.branch();
    std::uint64_t* child_slot = radix::slot_for_key(nodes_, node, h, key);
    if (child_slot == nullptr) return add_child(slot, node, h, Key::at(key, branch), leaf);
    const std::uint64_t child = *child_slot;
    if (child == 0) {  // an empty END slot
      nodes_.commit(child_slot, leaf);
      count_keys(1);
      return kInserted;
    }
    if (radix::is_leaf(child)) {
      if (nodes_.leaf_key(child) == key) {
        scope.set_kind(pm::OpKind::kUpdate);
        nodes_.commit(child_slot, leaf);
        return {UpsertStatus::kReplaced, radix::leaf_item(child)};
      }
      // The END slot only holds the one key of length `branch`, which would be equal.
      return push_down(child_slot, child, key, leaf, branch + 1);
    }
    slot = child_slot;
    node = child;
    path = branch + 1;
  }
}

// The first key: a root N4 (depth 0, no prefix) holding its leaf, persisted, then the root field.
UpsertResult ArtEngine::insert_first(std::string_view key, std::uint64_t leaf) noexcept {
  Entries children;
  if (!key.empty()) children.push(Key::at(key, 0), leaf);
  const std::uint64_t fresh = build(NodeType::kN4, Header{}, key.empty() ? leaf : 0, children);
  if (fresh == 0) return kOutOfMemory;
  region_->fence();
  nodes_.commit(root_field_, fresh);
  count_keys(1);
  return kInserted;
}

// A new child `chunk` -> `leaf` of `node` (in `slot`): in place when there is room (woart always;
// artcow for N48 and N256), else a copy of the node with the child added, in the next type when
// the node is full.
UpsertResult ArtEngine::add_child(std::uint64_t* slot, std::uint64_t node, const Header& h,
                                  unsigned chunk, std::uint64_t leaf) noexcept {
  const NodeType type = nodes_.type(node);
  const bool full = nodes_.child_count(node) == type_info(type).capacity;
  const bool copy = cow_ && (type == NodeType::kN4 || type == NodeType::kN16);
  if (full || copy) {
    const Entries children = nodes_.entries(node).with({chunk, leaf});
    if (!rebuild(slot, node, full ? larger(type) : type, h, *nodes_.end_slot(node), children)) {
      return kOutOfMemory;
    }
  } else {
    nodes_.add_in_place(node, chunk, leaf);
  }
  count_keys(1);
  return kInserted;
}

// `slot` holds `old_leaf`, a different key sharing the path [0, depth): a new N4 at `depth` with
// their longest common prefix takes both, and one store of `slot` publishes it.
UpsertResult ArtEngine::push_down(std::uint64_t* slot, std::uint64_t old_leaf, std::string_view key,
                                  std::uint64_t leaf, std::uint32_t depth) noexcept {
  const std::string_view other = nodes_.leaf_key(old_leaf);
  const std::uint32_t common = Key::common(key, other, depth);
  const std::uint32_t branch = depth + common;
  Entries children;
  std::uint64_t end = 0;
  // The shorter key may end at the branch; the other continues (they differ).
  const bool key_first = key.size() == branch ||
                         (other.size() > branch && Key::at(key, branch) < Key::at(other, branch));
  const std::pair<std::string_view, std::uint64_t> mine{key, leaf};
  const std::pair<std::string_view, std::uint64_t> theirs{other, old_leaf};
  for (const auto& [k, ref] : key_first ? std::array{mine, theirs} : std::array{theirs, mine}) {
    if (k.size() == branch) {
      end = ref;
    } else {
      children.push(Key::at(k, branch), ref);
    }
  }
  const std::uint64_t fresh =
      build(NodeType::kN4, Header::from_key(depth, common, key), end, children);
  if (fresh == 0) return kOutOfMemory;
  region_->fence();
  nodes_.commit(slot, fresh);
  count_keys(1);
  return kInserted;
}

// The node in `slot` (header `h`) has a prefix that differs from `key` at prefix chunk
// `mismatch` (or `key` ends there). A new N4 parent at h.depth takes the common part, the node
// and the new leaf; the node keeps the rest of its prefix:
//   woart   the node's header is rewritten in place (one 8-byte store) and flushed with the new
//           parent; fence; the slot is swung. A crash before the swing leaves the node's depth
//           ahead of its path, which Algorithm 2 turns back into the old header (seed 002 Alg. 1).
//   artcow  a copy of the node with the shortened prefix and the new parent are built and
//           persisted; the slot is swung; the old node is freed.
UpsertResult ArtEngine::split(std::uint64_t* slot, std::uint64_t node, const Header& h,
                              std::string_view key, std::uint64_t leaf,
                              std::uint32_t mismatch) noexcept {
  const std::string_view sample = radix::any_leaf_key(nodes_, node);  // the real prefix bytes
  const std::uint32_t cut = h.depth + mismatch;                       // the new parent's branch
  const Header shortened = Header::from_key(cut + 1, h.prefix_len - mismatch - 1, sample);
  std::uint64_t below = node;
  if (cow_) {
    below = build(nodes_.type(node), shortened, *nodes_.end_slot(node), nodes_.entries(node));
    if (below == 0) return kOutOfMemory;
  }
  Entries children;
  std::uint64_t end = 0;
  const unsigned node_chunk = Key::at(sample, cut);
  if (key.size() == cut) {
    end = leaf;
    children.push(node_chunk, below);
  } else if (Key::at(key, cut) < node_chunk) {
    children.push(Key::at(key, cut), leaf);
    children.push(node_chunk, below);
  } else {
    children.push(node_chunk, below);
    children.push(Key::at(key, cut), leaf);
  }
  const std::uint64_t parent =
      build(NodeType::kN4, Header::from_key(h.depth, mismatch, sample), end, children);
  if (parent == 0) {
    if (cow_) release_node(below);
    return kOutOfMemory;
  }
  if (!cow_) {
    std::uint64_t* word = nodes_.header_word(node);
    __atomic_store_n(word, shortened.pack(), __ATOMIC_RELAXED);
    region_->flush(word, sizeof *word);
  }
  region_->fence();
  nodes_.commit(slot, parent);
  if (cow_) release_node(node);
  count_keys(1);
  return kInserted;
}

}  // namespace pmcached::engine::art

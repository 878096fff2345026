// InnerTree: FPTree's volatile inner nodes. See inner_tree.h.
#include "engine/fptree/inner_tree.h"

#include <algorithm>
#include <iterator>

namespace pmcached::engine::fptree {
namespace {

// Nodes built at start-up are filled to 3/4, so the first splits do not all come at once.
constexpr std::size_t kBuildFill = InnerTree::kFanout * 3 / 4;

template <typename T>
void insert_at(std::vector<T>& v, std::size_t i, T value) {
  v.insert(v.begin() + static_cast<std::ptrdiff_t>(i), std::move(value));
}
template <typename T>
void erase_at(std::vector<T>& v, std::size_t i) {
  v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
}

}  // namespace

void InnerTree::build(const std::vector<std::pair<std::string, std::uint64_t>>& leaves) {
  root_.reset();
  leaves_ = leaves.size();
  height_ = 0;
  nodes_ = 0;
  if (leaves.empty()) return;
  // One level at a time: (bound, node) items, grouped into nodes of kBuildFill.
  std::vector<std::pair<std::string, std::unique_ptr<Node>>> level;
  for (std::size_t begin = 0; begin < leaves.size(); begin += kBuildFill) {
    auto node = std::make_unique<Node>();
    const std::size_t end = std::min(leaves.size(), begin + kBuildFill);
    for (std::size_t i = begin; i < end; ++i) {
      if (i > begin) node->keys.push_back(leaves[i].first);
      node->leaves.push_back(leaves[i].second);
    }
    refresh_heads(*node);
    level.emplace_back(leaves[begin].first, std::move(node));
  }
  height_ = 1;
  while (level.size() > 1) {
    std::vector<std::pair<std::string, std::unique_ptr<Node>>> above;
    for (std::size_t begin = 0; begin < level.size(); begin += kBuildFill) {
      auto node = std::make_unique<Node>();
      node->bottom = false;
      const std::size_t end = std::min(level.size(), begin + kBuildFill);
      for (std::size_t i = begin; i < end; ++i) {
        if (i > begin) node->keys.push_back(std::move(level[i].first));
        node->children.push_back(std::move(level[i].second));
      }
      refresh_heads(*node);
      above.emplace_back(std::move(level[begin].first), std::move(node));
    }
    nodes_ += level.size();
    level = std::move(above);
    ++height_;
  }
  nodes_ += 1;
  root_ = std::move(level.front().second);
}

std::size_t InnerTree::child_index(const Node& n, std::string_view key) noexcept {
  const auto count = static_cast<unsigned>(n.keys.size());
  return btree::upper_bound(
      n.prefix, key, 0, count, [&](unsigned i) { return n.heads[i]; },
      [&](unsigned i) { return std::string_view(n.keys[i]); });
}

void InnerTree::refresh_heads(Node& n) {
  n.heads.resize(n.keys.size());
  btree::refresh_heads(
      n.prefix, 0, static_cast<unsigned>(n.keys.size()),
      [&](unsigned i) { return std::string_view(n.keys[i]); },
      [&](unsigned i, std::uint32_t head) { n.heads[i] = head; });
}

void InnerTree::insert_head(Node& n, std::size_t i) {
  // A node that had no separator had no prefix to share: the first one sets it.
  if (n.keys.size() == 1 || n.prefix.shrink_to(n.keys[i])) {
    refresh_heads(n);
  } else {
    insert_at(n.heads, i, btree::head_after(n.keys[i], n.prefix.len));
  }
}

std::uint64_t InnerTree::find(std::string_view key) const noexcept {
  if (!root_) return 0;
  const Node* n = root_.get();
  while (!n->bottom) n = n->children[child_index(*n, key)].get();
  return n->leaves[child_index(*n, key)];
}

std::uint64_t InnerTree::previous(std::string_view key) const noexcept {
  if (!root_) return 0;
  const Node* n = root_.get();
  const Node* left = nullptr;  // the nearest subtree left of the path
  for (;;) {
    const std::size_t i = child_index(*n, key);
    if (n->bottom) {
      if (i > 0) return n->leaves[i - 1];
      break;
    }
    if (i > 0) left = n->children[i - 1].get();
    n = n->children[i].get();
  }
  if (left == nullptr) return 0;
  while (!left->bottom) left = left->children.back().get();
  return left->leaves.back();
}

void InnerTree::insert(std::string bound, std::uint64_t leaf) {
  ++leaves_;
  if (!root_) {
    root_ = std::make_unique<Node>();
    root_->leaves.push_back(leaf);
    height_ = 1;
    nodes_ = 1;
    return;
  }
  std::unique_ptr<Split> split = insert_into(*root_, std::move(bound), leaf);
  if (split) {
    auto root = std::make_unique<Node>();
    root->bottom = false;
    root->keys.push_back(std::move(split->key));
    refresh_heads(*root);
    root->children.push_back(std::move(root_));
    root->children.push_back(std::move(split->right));
    root_ = std::move(root);
    ++height_;
    ++nodes_;
  }
}

std::unique_ptr<InnerTree::Split> InnerTree::insert_into(Node& n, std::string bound,
                                                         std::uint64_t leaf) {
  const std::size_t i = child_index(n, bound);
  if (n.bottom) {
    insert_at(n.keys, i, std::move(bound));
    insert_at(n.leaves, i + 1, leaf);
  } else {
    std::unique_ptr<Split> below = insert_into(*n.children[i], std::move(bound), leaf);
    if (!below) return nullptr;
    insert_at(n.keys, i, std::move(below->key));
    insert_at(n.children, i + 1, std::move(below->right));
  }
  insert_head(n, i);
  if (n.count() <= kFanout) return nullptr;
  // Split in two halves; the bound of the right half moves up.
  const std::size_t mid = n.count() / 2;
  auto split = std::make_unique<Split>();
  split->right = std::make_unique<Node>();
  Node& right = *split->right;
  right.bottom = n.bottom;
  split->key = std::move(n.keys[mid - 1]);
  right.keys.assign(std::make_move_iterator(n.keys.begin() + static_cast<std::ptrdiff_t>(mid)),
                    std::make_move_iterator(n.keys.end()));
  n.keys.resize(mid - 1);
  // Both halves keep separators that share n's prefix, so its heads stay valid.
  right.prefix = n.prefix;
  right.heads.assign(n.heads.begin() + static_cast<std::ptrdiff_t>(mid), n.heads.end());
  n.heads.resize(mid - 1);
  if (n.bottom) {
    right.leaves.assign(n.leaves.begin() + static_cast<std::ptrdiff_t>(mid), n.leaves.end());
    n.leaves.resize(mid);
  } else {
    right.children.assign(
        std::make_move_iterator(n.children.begin() + static_cast<std::ptrdiff_t>(mid)),
        std::make_move_iterator(n.children.end()));
    n.children.resize(mid);
  }
  ++nodes_;
  return split;
}

bool InnerTree::remove_child(Node& n, std::size_t i) {
  if (n.count() == 1) {
    n.keys.clear();
    n.heads.clear();
    n.leaves.clear();
    n.children.clear();
    return true;
  }
  // Drop the bound on the side that keeps the ranges contiguous: the successor's bound (its
  // range then starts where the removed one's did) or, for the last child, the removed one's.
  const std::size_t bound = i < n.keys.size() ? i : i - 1;
  erase_at(n.keys, bound);
  erase_at(n.heads, bound);  // the prefix, shared by the rest, stays valid
  if (n.bottom) {
    erase_at(n.leaves, i);
  } else {
    erase_at(n.children, i);
  }
  return false;
}

bool InnerTree::erase_from(Node& n, std::string_view key) {
  const std::size_t i = child_index(n, key);
  if (n.bottom) return remove_child(n, i);
  if (!erase_from(*n.children[i], key)) return false;
  --nodes_;
  return remove_child(n, i);
}

void InnerTree::erase(std::string_view key) {
  if (!root_) return;
  --leaves_;
  if (erase_from(*root_, key)) {
    root_.reset();
    height_ = 0;
    nodes_ = 0;
    return;
  }
  while (!root_->bottom && root_->children.size() == 1) {
    std::unique_ptr<Node> child = std::move(root_->children.front());
    root_ = std::move(child);
    --height_;
    --nodes_;
  }
}

std::size_t InnerTree::bytes_of(const Node& n) noexcept {
  std::size_t bytes = sizeof(Node) + n.keys.capacity() * sizeof(std::string) +
                      n.heads.capacity() * sizeof(std::uint32_t) +
                      n.leaves.capacity() * sizeof(std::uint64_t) +
                      n.children.capacity() * sizeof(std::unique_ptr<Node>);
  for (const std::string& k : n.keys) {
    if (k.capacity() > 15) bytes += k.capacity() + 1;  // beyond the small-string buffer
  }
  for (const auto& child : n.children) bytes += bytes_of(*child);
  return bytes;
}

std::size_t InnerTree::bytes() const noexcept { return root_ ? bytes_of(*root_) : 0; }

}  // namespace pmcached::engine::fptree

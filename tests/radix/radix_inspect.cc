// The generic radix invariants checker. See radix_inspect.h.
#include "tests/radix/radix_inspect.h"

#include <algorithm>
#include <set>

#include "engine/pm/pool.h"
#include "engine/radix/radix_key.h"

namespace pmcached::engine::radix::testing {
namespace {

class Inspector {
 public:
  Inspector(const pm::PmRegion& region, const NodeDecoder& decode, TreeReport& report)
      : region_(region), decode_(decode), report_(report) {}

  // Checks the node at `offset` (path depth `implied`); returns the keys of its leaves.
  std::vector<std::string_view> node(std::uint64_t offset, std::uint32_t implied, bool is_root) {
    std::vector<std::string_view> keys;
    if (offset % 16 != 0 || offset < pm::kSuperblockSize || offset >= region_.size()) {
      problem("node offset " + std::to_string(offset) + " outside the heap");
      return keys;
    }
    if (!seen_.insert(offset).second) {
      problem("node " + std::to_string(offset) + " reached twice");
      return keys;
    }
    const NodeView v = decode_(region_, offset, is_root);
    std::string where = "node " + std::to_string(offset) + " " + v.type + " (path depth " +
                        std::to_string(implied) + ", header depth " +
                        std::to_string(v.header_depth) + ", prefix " +
                        std::to_string(v.prefix_len) + ")";
    for (const std::string& p : v.problems) problem(where + ": " + p);
    if (!v.readable) return keys;
    report_.nodes.emplace_back(offset, v.bytes);
    const unsigned bits = v.bits;
    if (is_root && (v.header_depth != 0 || v.prefix_len != 0)) {
      problem(where + ": root has a prefix or depth");
    }
    std::uint32_t depth = implied;
    if (v.depth_in_header) {
      if (v.header_depth != implied) problem(where + ": depth mismatch");
      depth = v.header_depth;  // the engine navigates by it
    } else if (v.header_depth != 0) {
      problem(where + ": depth bits set in a header that keeps no depth");
    }
    const std::uint32_t branch = depth + v.prefix_len;
    unsigned refs = 0;
    if (v.end_slot != 0) {
      ++refs;
      if (!is_leaf(v.end_slot)) {
        problem(where + ": END slot holds a node");
      } else {
        const std::string_view k = leaf(v.end_slot);
        if (chunk_count(k, bits) != branch) problem(where + ": END key does not end at the branch");
        keys.push_back(k);
      }
    }
    std::vector<std::pair<unsigned, std::uint64_t>> children = v.children;
    std::sort(children.begin(), children.end());
    for (std::size_t i = 0; i < children.size(); ++i) {
      const auto [c, child] = children[i];
      if (c >= (1u << bits)) problem(where + ": chunk " + std::to_string(c) + " out of range");
      if (i > 0 && children[i - 1].first == c) {
        problem(where + ": chunk " + std::to_string(c) + " appears twice");
      }
      if (child == 0) {
        problem(where + ": a used entry holds no reference");
        continue;
      }
      ++refs;
      const std::vector<std::string_view> below = is_leaf(child)
                                                      ? std::vector<std::string_view>{leaf(child)}
                                                      : node(child, branch + 1, false);
      for (std::string_view k : below) {
        if (chunk_count(k, bits) <= branch || chunk_at(k, branch, bits) != c) {
          problem(where + ": key under child " + std::to_string(c) + " has another chunk");
        }
        keys.push_back(k);
      }
    }
    if (!is_root && refs < 2) problem(where + ": non-root node with < 2 references");
    if (!keys.empty()) {
      const std::string_view first = keys.front();
      for (std::string_view k : keys) {
        if (chunk_count(k, bits) < branch) {
          problem(where + ": a key ends inside the prefix");
          continue;
        }
        for (std::uint32_t pos = depth; pos < branch; ++pos) {
          if (chunk_at(k, pos, bits) != chunk_at(first, pos, bits)) {
            problem(where + ": leaves disagree on the prefix");
            break;
          }
        }
      }
      if (chunk_count(first, bits) >= branch) {
        for (std::size_t j = 0; j < v.stored_prefix.size(); ++j) {
          if (v.stored_prefix[j] != chunk_at(first, depth + j, bits)) {
            problem(where + ": stored prefix wrong");
          }
        }
      }
    }
    return keys;
  }

 private:
  std::string_view leaf(std::uint64_t ref) {
    const ItemRef item = leaf_item(ref);
    const std::string_view k = item_key(region_, item);
    if (!report_.leaves.empty() && !(report_.leaves.back().first < k)) {
      problem("walk order not strictly increasing at key of item " + std::to_string(item));
    }
    report_.leaves.emplace_back(std::string(k), item);
    return k;
  }
  void problem(std::string text) {
    if (report_.problems.size() < 10) report_.problems.push_back(std::move(text));
  }

  const pm::PmRegion& region_;
  const NodeDecoder& decode_;
  TreeReport& report_;
  std::set<std::uint64_t> seen_;
};

}  // namespace

TreeReport inspect_tree(const pm::PmRegion& region, std::uint64_t root, const NodeDecoder& decode) {
  TreeReport report;
  if (root == 0) return report;
  if (is_leaf(root)) {
    report.problems.push_back("the root field holds a leaf");
    return report;
  }
  Inspector inspector(region, decode, report);
  (void)inspector.node(root, 0, true);
  return report;
}

std::uint64_t node_on_path(const pm::PmRegion& region, std::uint64_t root,
                           const NodeDecoder& decode, std::string_view key, std::uint32_t branch) {
  std::uint64_t ref = root;
  std::uint32_t depth = 0;
  for (int guard = 0; guard < 600 && ref != 0 && !is_leaf(ref); ++guard) {
    const NodeView v = decode(region, ref, ref == root);
    if (!v.readable) return 0;
    const std::uint32_t here = depth + v.prefix_len;
    if (here == branch) return ref;
    if (here > branch || chunk_count(key, v.bits) <= here) return 0;
    const unsigned c = chunk_at(key, here, v.bits);
    std::uint64_t next = 0;
    for (const auto& [chunk, child] : v.children) {
      if (chunk == c) next = child;
    }
    ref = next;
    depth = here + 1;
  }
  return 0;
}

unsigned chunk_at(std::string_view key, std::size_t i, unsigned bits) {
  return bits == 8 ? Chunks<8>::at(key, i) : Chunks<4>::at(key, i);
}

std::size_t chunk_count(std::string_view key, unsigned bits) {
  return bits == 8 ? Chunks<8>::count(key) : Chunks<4>::count(key);
}

NodeDecoder decoder_for(std::string_view engine) {
  if (engine == "wort") return decode_wort_node;
  if (engine == "woart" || engine == "artcow") {
    const bool cow = engine == "artcow";
    return [cow](const pm::PmRegion& region, std::uint64_t offset, bool is_root) {
      return decode_art_node(region, offset, is_root, cow);
    };
  }
  return {};
}

}  // namespace pmcached::engine::radix::testing

// Harness and invariants checker for the wort tests. See wort_harness.h.
#include "tests/wort/wort_harness.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "engine/engine_registry.h"
#include "engine/pm/persistence.h"
#include "engine/wort/wort_node.h"

namespace pmcached::engine::wort::testing {
namespace {

class Inspector {
 public:
  Inspector(const pm::PmRegion& region, TreeReport& report) : region_(region), report_(report) {}

  // Checks the node at `offset` (path depth `implied`); returns the keys of its leaves.
  std::vector<std::string_view> node(std::uint64_t offset, std::uint32_t implied, bool is_root) {
    std::vector<std::string_view> keys;
    if (offset % 16 != 0 || offset < pm::kSuperblockSize ||
        offset + sizeof(Node) > region_.size()) {
      problem("node offset " + std::to_string(offset) + " outside the heap");
      return keys;
    }
    if (!seen_.insert(offset).second) {
      problem("node " + std::to_string(offset) + " reached twice");
      return keys;
    }
    report_.nodes.push_back(offset);
    const Node* n = region_.at<Node>(offset);
    const Header h = Header::unpack(n->header);
    const std::string where = "node " + std::to_string(offset) + " (path depth " +
                              std::to_string(implied) + ", header depth " +
                              std::to_string(h.depth) + ", prefix " + std::to_string(h.prefix_len) +
                              ")";
    if (is_root && n->header != 0) problem(where + ": root has a prefix or depth");
    if (h.depth != implied) problem(where + ": depth mismatch");
    const std::uint32_t branch = h.branch();
    unsigned refs = 0;
    if (n->end_slot != 0) {
      ++refs;
      if (!is_leaf(n->end_slot)) {
        problem(where + ": END slot holds a node");
      } else {
        const std::string_view k = leaf(n->end_slot);
        if (nibble_count(k) != branch) problem(where + ": END key does not end at the branch");
        keys.push_back(k);
      }
    }
    for (unsigned i = 0; i < kFanout; ++i) {
      const std::uint64_t child = n->children[i];
      if (child == 0) continue;
      ++refs;
      const std::vector<std::string_view> below = is_leaf(child)
                                                      ? std::vector<std::string_view>{leaf(child)}
                                                      : node(child, branch + 1, false);
      for (std::string_view k : below) {
        if (nibble_count(k) <= branch || nibble(k, branch) != i) {
          problem(where + ": key under child " + std::to_string(i) + " has another nibble");
        }
        keys.push_back(k);
      }
    }
    if (!is_root && refs < 2) problem(where + ": non-root node with < 2 references");
    if (!keys.empty()) {
      const std::string_view first = keys.front();
      for (std::string_view k : keys) {
        if (nibble_count(k) < branch) {
          problem(where + ": a key ends inside the prefix");
          continue;
        }
        for (std::uint32_t pos = h.depth; pos < branch; ++pos) {
          if (nibble(k, pos) != nibble(first, pos)) {
            problem(where + ": leaves disagree on the prefix");
            break;
          }
        }
      }
      if (nibble_count(first) >= branch) {
        for (unsigned j = 0; j < h.stored(); ++j) {
          if (h.nibble(j) != nibble(first, h.depth + j)) problem(where + ": stored prefix wrong");
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
  TreeReport& report_;
  std::set<std::uint64_t> seen_;
};

}  // namespace

TreeReport inspect_tree(const pm::PmRegion& region, std::uint64_t root) {
  TreeReport report;
  if (root == 0) return report;
  Inspector inspector(region, report);
  (void)inspector.node(root, 0, true);
  return report;
}

std::string_view item_key(const pm::PmRegion& region, ItemRef ref) {
  if (ref == 0 || ref >= region.size()) return {};
  const auto* p = region.at<unsigned char>(ref);
  const std::size_t len = std::min<std::size_t>(p[0], region.size() - ref - 1);
  return {reinterpret_cast<const char*>(p + 1), len};
}

std::string numbered(std::string_view prefix, std::uint64_t n) {
  std::string s(prefix);
  s.append(std::to_string(n));
  return s;
}

std::string be64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 7; i >= 0; --i, v >>= 8) s[static_cast<std::size_t>(i)] = static_cast<char>(v);
  return s;
}

Harness::Harness(std::size_t bytes, pm::CrashSimulator* simulator) {
  pool_ = pm::Pool::open_region(pm::PmRegion::in_memory(bytes, simulator), "wort");
  allocator_ = std::make_unique<pm::Allocator>(region(), pool_->heap_begin(), pool_->heap_end());
  create_engine();
}

Harness::Harness(const std::vector<char>& image) {
  pool_ = pm::Pool::open_region(pm::PmRegion::from_image(image), "wort");
  allocator_ = std::make_unique<pm::Allocator>(region(), pool_->heap_begin(), pool_->heap_end());
  allocator_->begin_rebuild();
  create_engine();
  engine_->recover();
  engine_->for_each_block([&](std::uint64_t offset) {
    if (!allocator_->mark_reachable(offset)) {
      restart_problems_ += "node block " + std::to_string(offset) + " not markable; ";
    }
  });
  engine_->scan("", [&](std::string_view, ItemRef ref) {
    if (!allocator_->mark_reachable(ref)) {
      restart_problems_ += "item block " + std::to_string(ref) + " not markable; ";
    }
    return true;
  });
  allocator_->finish_rebuild();
}

void Harness::create_engine() {
  EngineContext context;
  const pm::PmRegion* r = &region();
  context.key_of = [r](ItemRef ref) { return item_key(*r, ref); };
  context.pool = pool_.get();
  context.allocator = allocator_.get();
  engine_ = find_engine("wort")->create(context);
}

ItemRef Harness::make_item(std::string_view key) {
  pm::OpScope scope(pm::OpKind::kItem);
  const std::uint64_t offset = allocator_->allocate(1 + key.size());
  if (offset == 0) return 0;
  auto* p = region().at<unsigned char>(offset);
  p[0] = static_cast<unsigned char>(key.size());
  std::memcpy(p + 1, key.data(), key.size());
  region().persist(p, 1 + key.size());
  return offset;
}

UpsertStatus Harness::put(std::string_view key, Model& model) {
  const ItemRef ref = make_item(key);
  if (ref == 0) return UpsertStatus::kOutOfMemory;
  const UpsertResult r = engine_->upsert(key, ref);
  if (r.status == UpsertStatus::kOutOfMemory) {
    free_item(ref);
    return r.status;
  }
  if (r.status == UpsertStatus::kReplaced) free_item(r.previous);
  model[std::string(key)] = ref;
  return r.status;
}

bool Harness::del(std::string_view key, Model& model) {
  const ItemRef previous = engine_->erase(key);
  model.erase(std::string(key));
  if (previous == kNoItem) return false;
  free_item(previous);
  return true;
}

Model Harness::contents() {
  Model out;
  engine_->scan("", [&](std::string_view key, ItemRef ref) {
    out.emplace(std::string(key), ref);
    return true;
  });
  return out;
}

std::string Harness::check(bool accounting) {
  std::string out;
  const TreeReport report = inspect_tree(region(), pool_->root());
  for (const std::string& p : report.problems) out += p + "; ";
  if (engine_->size() != report.leaves.size()) {
    out += "size() " + std::to_string(engine_->size()) + " != leaves " +
           std::to_string(report.leaves.size()) + "; ";
  }
  for (const auto& [key, ref] : report.leaves) {
    if (engine_->lookup(key) != ref) out += "lookup misses a leaf; ";
  }
  std::vector<std::pair<std::string, ItemRef>> scanned;
  engine_->scan("", [&](std::string_view key, ItemRef ref) {
    scanned.emplace_back(std::string(key), ref);
    return true;
  });
  if (scanned != report.leaves) out += "scan differs from the tree walk; ";
  std::multiset<std::uint64_t> blocks;
  engine_->for_each_block([&](std::uint64_t offset) { blocks.insert(offset); });
  if (blocks != std::multiset<std::uint64_t>(report.nodes.begin(), report.nodes.end())) {
    out += "for_each_block is not the node set, each once; ";
  }
  if (accounting) {
    std::uint64_t expected = 0;
    for (std::uint64_t offset : report.nodes) expected += allocator_->block_size(offset);
    for (const auto& leaf : report.leaves) expected += allocator_->block_size(leaf.second);
    const std::uint64_t in_use = allocator_->stats().bytes_in_use;
    if (in_use != expected) {
      out += "allocator bytes_in_use " + std::to_string(in_use) + " != nodes + items " +
             std::to_string(expected) + "; ";
    }
  }
  return out;
}

}  // namespace pmcached::engine::wort::testing

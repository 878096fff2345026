// ART transition workloads. See art_workloads.h.
#include "tests/art/art_workloads.h"

#include <algorithm>

namespace pmcached::engine::radix::testing {
namespace {

constexpr std::uint64_t kBase = 0xAA00000000000000ull;
const std::vector<std::string> kTypes = {"n4", "n16", "n48", "n256"};

void put_leaves(std::vector<Op>& ops, std::uint64_t from, std::uint64_t to) {
  for (std::uint64_t i = from; i < to; ++i) ops.push_back({true, leaf_key(i)});
}
// Root children b = 1..n-1 besides 0xAA: a root of `type`.
void make_root(std::vector<Op>& ops, const std::string& type) {
  for (std::uint64_t b = 1; b < children_for(type); ++b) ops.push_back({true, root_key(b)});
}
std::string upper(const std::string& type) {
  std::string s = type;
  s[0] = 'N';
  return s;
}

}  // namespace

std::string leaf_key(std::uint64_t i) { return be64(kBase + (i << 8)); }
std::string root_key(std::uint64_t b) { return be64(b << 56); }
std::string end_key() { return leaf_key(0).substr(0, 6); }

unsigned children_for(const std::string& type) {
  return type == "n4" ? 2 : type == "n16" ? 5 : type == "n48" ? 17 : 49;
}

std::string type_after(const std::string& type, unsigned count) {
  if (type == "none") return count >= 2 ? "n4" : "none";
  if (type == "n4") return count > 4 ? "n16" : "n4";
  if (type == "n16") return count > 16 ? "n48" : count < 4 ? "n4" : "n16";
  if (type == "n48") return count > 48 ? "n256" : count < 13 ? "n16" : "n48";
  return count < 38 ? "n48" : "n256";
}

std::vector<std::size_t> Transition::crash_ops() const {
  std::vector<std::size_t> out;
  for (const TypeStep& s : steps) out.push_back(s.op);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<Transition> growth_and_shrink() {
  std::vector<Transition> out;
  const std::string p = leaf_key(0);
  for (auto [from, to, count] : {std::tuple{"n4", "n16", 5u}, std::tuple{"n16", "n48", 17u},
                                 std::tuple{"n48", "n256", 49u}}) {
    Transition t{"Grow" + upper(from) + "To" + upper(to), {}, {}};
    put_leaves(t.ops, 0, count);
    t.steps.push_back({count - 1, p, 6, from, to});
    out.push_back(std::move(t));
  }
  // Grow to `from` with `grown` children, delete down to the minimum, then one more.
  for (auto [from, to, grown, floor] :
       {std::tuple{"n256", "n48", 49u, 38u}, std::tuple{"n48", "n16", 17u, 13u},
        std::tuple{"n16", "n4", 5u, 4u}}) {
    Transition t{"Shrink" + upper(from) + "To" + upper(to), {}, {}};
    put_leaves(t.ops, 0, grown);
    for (std::uint64_t i = grown; i-- > floor - 1;) t.ops.push_back({false, leaf_key(i)});
    t.steps.push_back({t.ops.size() - 1, p, 6, from, to});
    out.push_back(std::move(t));
  }
  // The root through every type and back: inserts 5, 17, 49 and deletes to 37, 12, 3.
  Transition root{"RootGrowsAndShrinks", {}, {}};
  const std::string r = root_key(1);
  for (std::uint64_t b = 1; b <= 49; ++b) root.ops.push_back({true, root_key(b)});
  root.steps = {{4, r, 0, "n4", "n16"}, {16, r, 0, "n16", "n48"}, {48, r, 0, "n48", "n256"}};
  for (std::uint64_t b = 49; b >= 4; --b) {
    root.ops.push_back({false, root_key(b)});
    const unsigned left = static_cast<unsigned>(b - 1);
    if (left == 37) root.steps.push_back({root.ops.size() - 1, r, 0, "n256", "n48"});
    if (left == 12) root.steps.push_back({root.ops.size() - 1, r, 0, "n48", "n16"});
    if (left == 3) root.steps.push_back({root.ops.size() - 1, r, 0, "n16", "n4"});
  }
  out.push_back(std::move(root));
  return out;
}

std::vector<Transition> prefix_splits() {
  std::vector<Transition> out;
  std::vector<std::pair<std::string, std::string>> shapes;  // (root type, split node type)
  for (const std::string& parent : kTypes) shapes.emplace_back(parent, "n4");
  for (const char* node : {"n16", "n48", "n256"}) shapes.emplace_back("n4", node);
  for (const auto& [parent, node] : shapes) {
    // Byte 3 is a stored prefix byte of the node (prefix bytes 1..5, 1..4 stored); byte 5 is not.
    for (std::uint32_t byte : {3u, 5u}) {
      Transition t{"Split" + upper(node) + "AtByte" + std::to_string(byte) + "Under" +
                       upper(parent) + "Root",
                   {},
                   {}};
      make_root(t.ops, parent);
      put_leaves(t.ops, 0, children_for(node));
      const std::string diverging = be64(kBase + (std::uint64_t{1} << (8 * (7 - byte))));
      t.ops.push_back({true, diverging});
      const std::size_t op = t.ops.size() - 1;
      t.steps.push_back({op, diverging, byte, "none", "n4"});
      t.steps.push_back({op, leaf_key(0), 6, node, node});
      t.steps.push_back({op, leaf_key(0), 0, parent, parent});
      out.push_back(std::move(t));
    }
  }
  return out;
}

std::vector<Transition> merges() {
  std::vector<Transition> out;
  for (const std::string& parent : kTypes) {
    Transition t{"MergeOntoALeafUnder" + upper(parent) + "Root", {}, {}};
    make_root(t.ops, parent);
    put_leaves(t.ops, 0, 2);
    t.ops.push_back({false, leaf_key(1)});
    t.steps.push_back({t.ops.size() - 1, leaf_key(0), 6, "n4", "none"});
    t.steps.push_back({t.ops.size() - 1, leaf_key(0), 0, parent, parent});
    out.push_back(std::move(t));
  }
  // X branches at byte 3 (prefix bytes 1..2) over the leaf AA00000000000000 and the node Y,
  // which branches at byte 7 (prefix bytes 4..6); deleting the leaf merges X into Y, whose
  // prefix becomes bytes 1..6.
  for (const std::string& node : kTypes) {
    Transition t{"MergeOntoA" + upper(node) + "WithAPrefix", {}, {}};
    const std::string y0 = be64(kBase + 0x0000000100000000ull);
    t.ops.push_back({true, be64(kBase)});
    for (std::uint64_t j = 0; j < children_for(node); ++j) {
      t.ops.push_back({true, be64(kBase + 0x0000000100000000ull + j)});
    }
    t.ops.push_back({false, be64(kBase)});
    const std::size_t op = t.ops.size() - 1;
    t.steps.push_back({op, y0, 3, "n4", "none"});
    t.steps.push_back({op, y0, 7, node, node});
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<Transition> end_slots() {
  std::vector<Transition> out;
  for (const std::string& node : kTypes) {
    Transition t{"EndSlotInsertAndDeleteIn" + upper(node), {}, {}};
    put_leaves(t.ops, 0, children_for(node));
    t.ops.push_back({true, end_key()});
    t.steps.push_back({t.ops.size() - 1, leaf_key(0), 6, node, node});
    t.ops.push_back({false, end_key()});
    t.steps.push_back({t.ops.size() - 1, leaf_key(0), 6, node, node});
    out.push_back(std::move(t));
  }
  // The END slot making a node, a merge onto the END leaf, and a merge onto a child leaf.
  Transition t{"EndSlotMakesAndMergesANode", {}, {}};
  const std::string p = leaf_key(0);
  t.ops = {{true, p}, {true, end_key()}, {false, p}, {true, p}, {false, end_key()}};
  t.steps = {{1, p, 6, "none", "n4"},
             {2, p, 6, "n4", "none"},
             {3, p, 6, "none", "n4"},
             {4, p, 6, "n4", "none"}};
  out.push_back(std::move(t));
  return out;
}

}  // namespace pmcached::engine::radix::testing

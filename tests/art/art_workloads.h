// Workloads for the ART node transitions of woart and artcow, built from 8-byte big-endian keys so
// the byte positions are plain: leaf(i) = be64(0xAA00000000000000 + (i << 8)) puts i children
// under ONE node that branches at byte 6 (the root's child 0xAA, prefix bytes 1..5);
// root_key(b) = be64(b << 56) puts a leaf under root child b.
//
// Each Transition names the ops inside which a crash test crashes (the transition itself; the
// setup before it is crashed by the shared suites) and, for each of them, the node type expected
// at (probe, branch) just before and just after it — so a test fails if the transition does not
// happen where the layout documents it.
//
// Thread safety: plain values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/radix/radix_harness.h"

namespace pmcached::engine::radix::testing {

[[nodiscard]] std::string leaf_key(std::uint64_t i);  // child i of the node at byte 6
[[nodiscard]] std::string root_key(std::uint64_t b);  // root child b (b >= 1)
[[nodiscard]] std::string end_key();                  // ends at byte 6: the END slot there

// Children that make a node of `type` ("n4": 2, "n16": 5, "n48": 17, "n256": 49).
[[nodiscard]] unsigned children_for(const std::string& type);

// The node on `probe`'s path branching at byte `branch` has type `before` just before op `op`
// and `after` just after it ("none": there is no such node).
struct TypeStep {
  std::size_t op;
  std::string probe;
  std::uint32_t branch;
  std::string before, after;
};

struct Transition {
  std::string name;  // a gtest name: letters and digits
  std::vector<Op> ops;
  std::vector<TypeStep> steps;
  // The ops the steps name, each once: where the crash tests crash.
  [[nodiscard]] std::vector<std::size_t> crash_ops() const;
};

// Growth N4->N16 (5th child), N16->N48 (17th), N48->N256 (49th); shrink N256->N48 (to 37),
// N48->N16 (to 12), N16->N4 (to 3); the root growing through every type and shrinking back.
[[nodiscard]] std::vector<Transition> growth_and_shrink();
// A key diverging inside a node's compressed prefix, at a stored byte (3) and beyond the four
// stored bytes (5): for a parent (the root) of each type and for a split node of each type.
[[nodiscard]] std::vector<Transition> prefix_splits();
// Deletes leaving a non-root node one reference: onto a leaf (under a root of each type) and onto
// a node with a prefix (of each type).
[[nodiscard]] std::vector<Transition> merges();
// A key ending at a node (END slot) inserted and deleted in a node of each type, and the END
// slot making and unmaking a node (merge onto the END leaf and onto a child leaf).
[[nodiscard]] std::vector<Transition> end_slots();

// The type of a node with `count` children that had type `type` before one child was added or
// removed (art_node.h bounds: grow when full, shrink below N16 4, N48 13, N256 38).
[[nodiscard]] std::string type_after(const std::string& type, unsigned count);

}  // namespace pmcached::engine::radix::testing

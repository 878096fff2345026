// Where to split a full node, and the separator that goes up (seed 004 §4.1: "the smallest
// possible separator within the neighborhood of separators around the middle").
//
// A leaf split between keys a (last left) and b (first right) sends up the shortest s with
// a < s <= b: b's prefix one byte longer than the prefix a and b share. An inner split sends up
// one of its separators (it cannot be shortened: it is some child's bound). Among the split
// points whose two halves fit in a page, those within a window around the byte-balanced middle
// are candidates; the one with the shortest separator wins, the nearer to the middle on a tie.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string_view>

namespace pmcached::engine::bptree {

[[nodiscard]] std::size_t common_prefix(std::string_view a, std::string_view b) noexcept;

// The shortest s with left < s <= right (left < right).
[[nodiscard]] std::string_view shortest_separator(std::string_view left,
                                                  std::string_view right) noexcept;

// The entries to split, in key order: their sizes in the page (slot and record).
// Leaf: the split point k in [1, n) gives left = [0, k), right = [k, n).
// Inner: k in [1, n - 1) gives left = [0, k), up = entry k, right = (k, n).
// `separator_size(k)` is the size of the separator split point k sends up. Returns 0 if no split
// point leaves both halves within `capacity` bytes.
[[nodiscard]] std::size_t choose_split(
    std::span<const std::size_t> entry_bytes, std::size_t capacity, bool inner,
    const std::function<std::size_t(std::size_t)>& separator_size);

}  // namespace pmcached::engine::bptree

// Where to split a full node, and the separator that goes up (seed 004 §4.1: "the smallest
// possible separator within the neighborhood of separators around the middle").
//
// A leaf split between keys a (last left) and b (first right) sends up the shortest s with
// a < s <= b: b's prefix one byte longer than the prefix a and b share. An inner split sends up
// one of its separators (it cannot be shortened: it is some child's bound). Among the split
// points whose two halves fit in a page, those within a window around the byte-balanced middle
// are candidates; the one with the shortest separator wins, the nearer to the middle on a tie.
//
// Edge splits (SplitAt): at the edges of a level under an ascending or descending load, a middle
// split would leave every page behind the load half full for good, since no key comes back to
// it. An edge split leaves the page that stays behind nine tenths full (PostgreSQL's fillfactor
// for the rightmost page, nbtsplitloc.c); the page at the edge takes the new entry with the last
// tenth of the old ones, so keys that a concurrent load delivers slightly out of order find room
// on either side (keeping every old entry on the left leaves a late key a full page: the
// benchmark's load of 419,430 keys over 4 connections then took 8,525 pages, not 5,846). The
// split point is the one nearest the target, with no window: a shorter separator rarely saves
// anything in an inner page (records are rounded up to 8 bytes), and with decimal sequence keys
// the window locked every page at the digit boundary below the target (87.5% full).
// Which splits lean (split_direction()): the last page of a level when the new entry is in its
// right half, the first page when it is in its left half. Only two pages per level, so random
// inserts keep the middle split; the right half rather than "after every key", because the key
// that overflows the page in a concurrent load may be one that arrived late. A load that
// appends at the end of an inner page of the key space (several ascending streams) is not
// detected: that would take a guess at adjacency (PostgreSQL's _bt_afternewitemoff()), and
// splitting every page whose new entry goes last leans a 1 / entries share of random splits.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string_view>

namespace pmcached::engine::bptree {

// Which way a split leans.
enum class SplitAt {
  kMiddle,     // both halves about equal (in bytes)
  kLeftFull,   // the left page nine tenths full: the last page of a level, growing rightwards
  kRightFull,  // the right page nine tenths full: the first page of a level, growing leftwards
};

// How full an edge split leaves the page behind the load, in tenths of the node's capacity.
inline constexpr std::size_t kEdgeFillTenths = 9;

[[nodiscard]] std::size_t common_prefix(std::string_view a, std::string_view b) noexcept;

// The shortest s with left < s <= right (left < right).
[[nodiscard]] std::string_view shortest_separator(std::string_view left,
                                                  std::string_view right) noexcept;

// How to split a page that is the first (`leftmost`) and/or last (`rightmost`) of its level when
// the new entry is at `position` of the `n` entries (the new one included): an edge split when
// the new entry is in the half towards that edge, else the middle.
[[nodiscard]] SplitAt split_direction(bool leftmost, bool rightmost, std::size_t position,
                                      std::size_t n) noexcept;

// The entries to split, in key order: their sizes in the page (slot and record).
// Leaf: the split point k in [1, n) gives left = [0, k), right = [k, n).
// Inner: k in [1, n - 1) gives left = [0, k), up = entry k, right = (k, n).
// `separator_size(k)` is the size of the separator split point k sends up (middle splits only).
// Returns 0 if no split point leaves both halves within `capacity` bytes.
[[nodiscard]] std::size_t choose_split(
    std::span<const std::size_t> entry_bytes, std::size_t capacity, bool inner,
    const std::function<std::size_t(std::size_t)>& separator_size, SplitAt at = SplitAt::kMiddle);

}  // namespace pmcached::engine::bptree

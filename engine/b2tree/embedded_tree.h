// EmbeddedTree: the B2-tree's in-page search structure (seed 004 §3): a small trie of decision
// and span nodes plus a range array, stored in a region of a slotted page, that narrows the
// search for a key to a short run of the page's slots and says how many leading key bytes that
// run's keys share with the key (`skip`), so the slots can carry the bytes after them (infixes).
//
// Pure functions on bytes: no I/O, no latches, no allocation on the lookup path. The region is
// part of a page (engine/bptree/node.h puts it between the node header and the slots); the page's
// owner writes it (the builder fills a buffer, the range adjustments name the bytes to store so
// the caller can log them through buffer::PageChanges).
//
// Key order is bytewise with a proper prefix first (std::string_view order); keys are 0..250
// bytes of any value (a \0 byte is an ordinary byte: no padding semantics). A key that ends
// before a span or decision byte is smaller than every byte there.
//
// Safety (seed 004 §3.6): lookup() reads only inside the region it is given, follows only child
// offsets that strictly increase (so it terminates), checks every range bound against
// `slot_count`, and returns a valid RangeHit whatever bytes the region holds (a fuzz test feeds
// it random bytes). A region that is not a valid tree gives some in-bounds range; only a
// well-formed region built over the page's keys gives the right one.
//
// Thread safety: none here; the caller holds the page's latch (shared for lookup, exclusive for
// the rest).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

namespace pmcached::engine::b2tree {

inline constexpr std::uint16_t kNoSkip = 0xFFFF;
inline constexpr unsigned kDefaultThreshold = 32;  // seed 004 §3.5: ~32 slots per range

// Where the embedded tree sends a key.
struct RangeHit {
  std::uint16_t range;  // index into the range array
  std::uint16_t begin;  // first slot of the range
  std::uint16_t end;    // one past its last slot (begin <= end <= slot_count)
  // Bytes every key of the range shares with the looked-up key (the span bytes the lookup
  // matched), or kNoSkip when the key left the tree through a minimum or maximum edge (it
  // differs from the range's shared prefix; compare whole keys then).
  std::uint16_t skip;
  // Where the slots of the range take their heads: `skip` plus the range's unconfirmed prefix,
  // the further bytes every key of the range shares that the tree does not hold (ART's
  // optimistic path compression: only their count is stored). The looked-up key may differ
  // there: whoever searches the range compares those bytes with one of its keys at the end.
  // Equal to `skip` on pages built without them (and kNoSkip when `skip` is).
  std::uint16_t heads_at;
};

// Whether the builder gives ranges an unconfirmed prefix. Only leaf pages do: checking it costs a
// record read whenever the looked-up key is not in the page, and on an inner page it never is.
enum class Unconfirmed : bool { kNone, kPrefixes };

// What the builder made. Leaf ranges carry no span of their own: a range's skip is the sum of the
// spans above the decision node that made it (the bytes the tree confirms on the way).
struct BuildResult {
  std::size_t bytes = 0;  // region bytes written (0: no tree fits in the budget)
  // Per range: the length of the prefix all of its keys share as the tree confirms it (the sum of
  // the span nodes on its path) plus its unconfirmed prefix: the offset at which the slots of
  // that range take their infix (RangeHit::heads_at).
  std::vector<std::uint16_t> range_skip;
  std::vector<std::uint16_t> range_end;  // per range: its exclusive upper slot bound
};

// Statistics of a region (for `stats engine`).
struct TreeShape {
  std::size_t bytes = 0;
  std::size_t ranges = 0;
  std::size_t decision_nodes = 0;
  std::size_t span_nodes = 0;
  std::size_t span_bytes = 0;    // the span nodes' bytes
  std::size_t prefix_bytes = 0;  // the short prefixes folded into decision nodes
  std::size_t unconfirmed = 0;   // ranges with an unconfirmed prefix
};

// The keys of a page in slot order (sorted, distinct): key(i) for i < count.
using KeyAt = std::function<std::string_view(std::size_t)>;

// Builds the tree over `count` sorted keys into `out` (at most out.size() bytes) with ranges of
// at most `threshold` keys where the budget allows (larger ones where it does not: the builder
// doubles the threshold until the tree fits, at last one range with no span, 7 bytes; 0 bytes
// only below that). A range also exceeds the threshold where only a \0 byte tells its keys apart
// from a key that is their prefix (an ended key and a 0 byte go the same way).
// Construction as seed 004 §3.1.1: the longest common prefix at the current depth becomes a
// span node, else a decision node splitting at the middle key's byte (searching both ways for the
// more even split). Every range a lookup can land in is non-empty at build time except where a
// decision boundary makes one empty. Deterministic: the same keys give the same bytes.
// With Unconfirmed::kPrefixes, a range of two or more keys whose heads taken after its skip
// would tie (two neighbours share the head's 7 bytes) gets the bytes its keys share beyond the
// skip (at most 255) as an unconfirmed prefix, a byte per range, written when a quarter of the
// ranges or more gain 4 bytes or more from it (and it fits).
BuildResult build(const KeyAt& key, std::size_t count, unsigned threshold, std::span<std::byte> out,
                  Unconfirmed unconfirmed = Unconfirmed::kNone);

// The range for `key` in a page with `slot_count` slots. Invariant for a region built over the
// page's keys and kept up to date by the adjustments below: the first slot whose key is >= `key`
// lies in [begin, end], and when skip != kNoSkip every key in slots [begin, end) and `key` itself
// share their first `skip` bytes, and the keys in [begin, end) share their first `heads_at`.
[[nodiscard]] RangeHit lookup(std::span<const std::byte> region, std::string_view key,
                              std::size_t slot_count) noexcept;

// The range array's place in the region, so the owner can store its adjusted u16 values through
// its change log: `count` exclusive upper bounds at region offsets `offset + 2*i`.
struct RangeArray {
  std::size_t offset = 0;
  std::size_t count = 0;
};
[[nodiscard]] RangeArray range_array(std::span<const std::byte> region) noexcept;

// Adjusts the range array after one slot was inserted into range `range` (every bound from
// `range` on grows by one) or erased from it (shrinks by one). `store(offset, value)` is called for
// each u16 changed, with its region offset.
// Which range: for an insert, lookup(key).range, and only when that lookup's skip != kNoSkip and
// the key shares the range's unconfirmed prefix (a range with one but no keys cannot tell): a
// key that left the tree through a minimum or maximum edge, or differs in the unconfirmed bytes,
// does not share the prefix of the range it lands in (nor could its slot take its infix at that
// range's heads_at), so the page must rebuild the tree instead. Another range, even a neighbour at
// a boundary, can break the invariant: a key put at the end of the range before its own hides from
// later keys of its own range, and one put into a range beyond an empty range in between leaves
// that empty range pointing before it. For an erase, range_of_slot(index).
void after_insert(std::span<const std::byte> region, std::uint16_t range,
                  const std::function<void(std::size_t, std::uint16_t)>& store);
void after_erase(std::span<const std::byte> region, std::uint16_t range,
                 const std::function<void(std::size_t, std::uint16_t)>& store);

// The range holding slot `index` (the last range whose begin <= index), for an erase. Not for an
// insert at a range boundary: see after_insert.
[[nodiscard]] std::uint16_t range_of_slot(std::span<const std::byte> region,
                                          std::size_t index) noexcept;

[[nodiscard]] TreeShape shape(std::span<const std::byte> region) noexcept;

namespace detail {
// A decision's step, exposed for its test: the index of the first of `count` (<= 15) separator
// bytes that is >= k, or `count`. Reads 16 bytes from `separators` when `readable` >= 16 (one
// SSE2 compare), else only the `count` separators.
[[nodiscard]] unsigned first_at_or_above(const std::byte* separators, std::size_t readable,
                                         unsigned count, std::uint8_t k) noexcept;
}  // namespace detail

}  // namespace pmcached::engine::b2tree

// The embedded tree's bytes (docs/LAYOUTS.md, "b2tree embedded tree"), all integers u16
// little-endian (native, as every page field), unaligned:
//
//   [0, 2)        u16 R | U << 15    R ranges (>= 1); U: the unconfirmed prefixes follow
//   [2, 2 + 2R)   u16 bound[R]       exclusive upper slot bound of each range; range r is
//                                    [r == 0 ? 0 : bound[r-1], bound[r])
//   [.., + R)     u8 unconfirmed[R]  (only with U) each range's unconfirmed prefix length
//   [root, size)  the nodes in pre-order from the root, back to back: every child lies after
//                 its parent (offsets only grow, so a walk over any bytes ends).
//
// Nodes, each with a one-byte header:
//   span      0b0LLLLLLL, then L (0..127) bytes; its only child follows directly. Longer common
//             prefixes are chains of spans.
//   decision  0b1FPPNNNN, then P (0..3) prefix bytes, then N (0..kMaxSeparators) separator
//             bytes. The prefix is a short span folded into the decision (matched the same way,
//             with the same virtual edges); the separators decide at the byte after it. A key
//             byte b goes to the first child whose separator >= b, to the last child when b is
//             above them all; a key that has ended (no byte at the depth) to the first child.
//     leaf    (F = 1) then one u16: the first child's range; child i is that range + i.
//     inner   (F = 0) then N + 1 u16 payloads: with bit 15 set a range index (bits 0..14), else
//             the offset of a child node (greater than the node's own offset).
//   A leaf decision with N = 0 is the terminal that follows a span over a single range.
// Sizes: a leaf decision is P + N + 3 bytes, so a range costs 3 bytes (separator, bound) plus its
// share of a node header; an inner decision is P + 3N + 3 (at most 51); a binary decision plus an
// empty span (seed 004 §3.5's x) 7 bytes. Ranges get no span of their own (only subtrees that
// split further do): a leaf span costs its bytes plus a terminal and turns compact leaf decisions
// into inner ones (on URL-like 64 KiB pages a first version with leaf spans, a tag on every
// payload and fanout 9 took 0.72% of the page; one without them 0.40%). Every subtree that
// splits further starts with the prefix its keys share, mostly one or two bytes on title-like
// keys (the byte its parent decided on, and the next): folded into its decision they save the
// span's header byte (title-like 64 KiB pages: 329 to 307 bytes with the root offset the first
// version stored, which the range count gives).
#include "engine/b2tree/embedded_tree.h"

#include <algorithm>
#include <bit>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace pmcached::engine::b2tree {
namespace {

constexpr std::size_t kHeaderBytes = 2;
constexpr unsigned kMaxSeparators = 15;  // a decision node stays within a cache line
constexpr unsigned kMaxSpan = 127;
constexpr unsigned kMaxPrefix = 3;
constexpr std::size_t kShortPrefix = 8;  // compared without memcmp
constexpr std::uint8_t kDecisionFlag = 0x80;
constexpr std::uint8_t kLeafFlag = 0x40;
constexpr unsigned kPrefixShift = 4;
constexpr std::uint8_t kCountMask = 0x0F;
constexpr std::uint16_t kRangeTag = 0x8000;
// Offsets and range indexes are 15 bits: the region is at most this long.
constexpr std::size_t kMaxRegion = 0x7FFF;
constexpr std::uint16_t kUnconfirmedFlag = 0x8000;  // in the header word
constexpr std::size_t kMaxUnconfirmed = 0xFF;
constexpr std::size_t kHeadBytes = 7;  // a wide slot's head (engine/bptree/node.h)
constexpr std::uint8_t kWorthwhileUnconfirmed = 4;

std::uint16_t load16(std::span<const std::byte> region, std::size_t offset) noexcept {
  std::uint16_t v;
  std::memcpy(&v, region.data() + offset, sizeof v);
  return v;
}

std::uint8_t byte_at(std::span<const std::byte> region, std::size_t offset) noexcept {
  return static_cast<std::uint8_t>(region[offset]);
}

// The validated region header: ranges == 0 when the region cannot be a tree.
struct Header {
  std::size_t ranges = 0;
  std::size_t root = 0;
  std::size_t unconfirmed = 0;  // offset of the unconfirmed prefixes, 0 if there are none
};

Header read_header(std::span<const std::byte> region) noexcept {
  if (region.size() < kHeaderBytes) return {};
  const std::uint16_t word = load16(region, 0);
  const std::size_t ranges = word & ~kUnconfirmedFlag;
  const std::size_t bounds_end = kHeaderBytes + 2 * ranges;
  const bool unconfirmed = (word & kUnconfirmedFlag) != 0;
  const std::size_t root = bounds_end + (unconfirmed ? ranges : 0);
  if (ranges == 0 || root > region.size()) return {};
  return {ranges, root, unconfirmed ? bounds_end : 0};
}

// ---- lookup ----

RangeHit whole_page(std::size_t slot_count) noexcept {
  return {0, 0, static_cast<std::uint16_t>(std::min<std::size_t>(slot_count, 0xFFFF)), kNoSkip,
          kNoSkip};
}

RangeHit finish(std::span<const std::byte> region, const Header& h, std::size_t range,
                std::uint16_t skip, std::size_t slot_count) noexcept {
  if (range >= h.ranges) return whole_page(slot_count);
  const std::size_t limit = std::min<std::size_t>(slot_count, 0xFFFF);
  const std::size_t end = std::min<std::size_t>(load16(region, kHeaderBytes + 2 * range), limit);
  const std::size_t begin =
      range == 0 ? 0 : std::min<std::size_t>(load16(region, kHeaderBytes + 2 * (range - 1)), end);
  std::uint16_t heads_at = skip;
  if (h.unconfirmed != 0 && skip != kNoSkip) {
    heads_at = static_cast<std::uint16_t>(
        std::min<std::size_t>(skip + byte_at(region, h.unconfirmed + range), kNoSkip - 1));
  }
  return {static_cast<std::uint16_t>(range), static_cast<std::uint16_t>(begin),
          static_cast<std::uint16_t>(end), skip, heads_at};
}

// Where a decision node's parts lie; false if the node does not fit the region.
struct Decision {
  unsigned prefix;         // prefix bytes, from the node's offset + 1
  std::size_t separators;  // offset of the first separator
  std::size_t payloads;    // offset of the first payload
  unsigned count;          // separators
  bool leaf;               // one u16 payload: the first child's range
  std::size_t end() const { return payloads + (leaf ? 2 : 2 * (count + 1)); }
};

bool read_decision(std::span<const std::byte> region, std::size_t pos, Decision& d) noexcept {
  const std::uint8_t header = byte_at(region, pos);
  const unsigned p = (header >> kPrefixShift) & kMaxPrefix;
  const unsigned n = header & kCountMask;
  d = {p, pos + 1 + p, pos + 1 + p + n, n, (header & kLeafFlag) != 0};
  return d.end() <= region.size();
}

// How `key` from `depth` compares with the `length` prefix bytes at `at` (a span's or a
// decision's): kMatched, or which virtual edge it takes (a key that ends inside is below).
enum class Prefix { kMatched, kBelow, kAbove };

// Inlined: a call per node would cost what the short path saves.
[[gnu::always_inline]] inline Prefix match_prefix(std::span<const std::byte> region, std::size_t at,
                                                  std::size_t length, std::string_view key,
                                                  std::size_t depth) noexcept {
  // A decision's prefix (0..3 bytes) and a short span byte by byte: a call to memcmp costs more.
  if (length <= kShortPrefix) {
    for (std::size_t i = 0; i < length; ++i) {
      if (depth + i >= key.size()) return Prefix::kBelow;
      const auto a = static_cast<std::uint8_t>(key[depth + i]);
      const std::uint8_t b = byte_at(region, at + i);
      if (a != b) return a > b ? Prefix::kAbove : Prefix::kBelow;
    }
    return Prefix::kMatched;
  }
  // One memcmp over the bytes the key has (spans of URL-like keys are tens of bytes); only on a
  // difference does the first differing byte decide the edge.
  const std::size_t have = depth < key.size() ? std::min(length, key.size() - depth) : 0;
  if (std::memcmp(key.data() + depth, region.data() + at, have) != 0) {
    std::size_t i = 0;
    while (key[depth + i] == static_cast<char>(region[at + i])) ++i;
    return static_cast<std::uint8_t>(key[depth + i]) > byte_at(region, at + i) ? Prefix::kAbove
                                                                               : Prefix::kBelow;
  }
  return have < length ? Prefix::kBelow : Prefix::kMatched;
}

// detail::first_at_or_above (embedded_tree.h), inlined into the lookup.
inline unsigned separators_at_or_above(const std::byte* separators, std::size_t readable,
                                       unsigned count, std::uint8_t k) noexcept {
#if defined(__SSE2__)
  // One compare of 16 bytes instead of a loop of up to 15 steps; the bytes past the separators
  // (the node's payloads, or the next node) are masked off.
  if (readable >= 16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(separators));
    // separator >= k exactly where k - separator, saturated at 0, is 0.
    const __m128i below = _mm_subs_epu8(_mm_set1_epi8(static_cast<char>(k)), bytes);
    const auto at_or_above =
        static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(below, _mm_setzero_si128())));
    return static_cast<unsigned>(std::countr_zero(at_or_above | 1u << count));
  }
#endif
  unsigned i = 0;
  while (i < count && static_cast<std::uint8_t>(separators[i]) < k) ++i;
  return i;
}

// The child of decision `d` that key byte `k` takes.
unsigned child_for(std::span<const std::byte> region, const Decision& d, std::uint8_t k) noexcept {
  return separators_at_or_above(region.data() + d.separators, region.size() - d.separators, d.count,
                                k);
}

// Where child `i` of a decision node leads: a range (true, `value` = its index) or a node
// (false, `value` = its offset).
bool follow(std::span<const std::byte> region, const Decision& d, unsigned i,
            std::size_t& value) noexcept {
  if (d.leaf) {
    value = std::size_t{load16(region, d.payloads)} + i;
    return true;
  }
  const std::uint16_t p = load16(region, d.payloads + 2 * i);
  value = p & ~kRangeTag;
  return (p & kRangeTag) != 0;
}

// MinimumLeaf / MaximumLeaf (seed 004 Algorithm 1): the first or last range under `pos`.
RangeHit extreme_leaf(std::span<const std::byte> region, const Header& h, std::size_t pos,
                      bool maximum, std::size_t slot_count) noexcept {
  while (pos < region.size()) {
    const std::uint8_t header = byte_at(region, pos);
    if ((header & kDecisionFlag) == 0) {
      pos += 1 + header;
      continue;
    }
    Decision d;
    if (!read_decision(region, pos, d)) break;
    std::size_t next;
    if (follow(region, d, maximum ? d.count : 0, next))
      return finish(region, h, next, kNoSkip, slot_count);
    if (next <= pos) break;
    pos = next;
  }
  return whole_page(slot_count);
}

// ---- building ----

class Builder {
 public:
  Builder(std::vector<std::string_view> keys, unsigned threshold, bool spans,
          Unconfirmed unconfirmed)
      : keys_(std::move(keys)),
        threshold_(std::max(threshold, 1u)),
        spans_(spans),
        want_unconfirmed_(unconfirmed == Unconfirmed::kPrefixes) {}

  // Builds the whole tree; false if it grew past `limit` bytes.
  bool run(std::size_t limit) {
    limit_ = limit;
    emit_node(0, keys_.size(), 0);
    if (over()) return false;
    // The unconfirmed prefixes cost a byte per range: they are written where they pay, when a
    // quarter of the ranges or more move their heads by kWorthwhileUnconfirmed bytes (URL-like
    // keys: about 40% of the ranges on 64 KiB pages, titles 4%, Random none), and fit.
    const auto worthwhile = static_cast<std::size_t>(
        std::count_if(unconfirmed_.begin(), unconfirmed_.end(),
                      [](std::uint8_t n) { return n >= kWorthwhileUnconfirmed; }));
    has_unconfirmed_ = worthwhile > 0 && 4 * worthwhile >= ends_.size();
    if (over()) has_unconfirmed_ = false;
    return true;
  }

  std::size_t bytes() const { return nodes_at() + nodes_.size(); }

  BuildResult write(std::span<std::byte> out) const {
    BuildResult r;
    r.bytes = bytes();
    r.range_end = ends_;
    r.range_skip = skips_;
    for (std::size_t i = 0; i < unconfirmed_.size() && has_unconfirmed_; ++i)
      r.range_skip[i] = static_cast<std::uint16_t>(r.range_skip[i] + unconfirmed_[i]);
    const std::size_t base = nodes_at();
    std::vector<std::uint8_t> nodes = nodes_;
    for (std::size_t at : child_offsets_) {  // node-relative offsets become region offsets
      std::uint16_t v;
      std::memcpy(&v, nodes.data() + at, 2);
      v = static_cast<std::uint16_t>(v + base);
      std::memcpy(nodes.data() + at, &v, 2);
    }
    const auto put16 = [&](std::size_t at, std::size_t v) {
      const auto u = static_cast<std::uint16_t>(v);
      std::memcpy(out.data() + at, &u, 2);
    };
    put16(0, ends_.size() | (has_unconfirmed_ ? kUnconfirmedFlag : 0));
    for (std::size_t i = 0; i < ends_.size(); ++i) put16(kHeaderBytes + 2 * i, ends_[i]);
    if (has_unconfirmed_) {
      std::memcpy(out.data() + kHeaderBytes + 2 * ends_.size(), unconfirmed_.data(),
                  unconfirmed_.size());
    }
    std::memcpy(out.data() + base, nodes.data(), nodes.size());
    return r;
  }

 private:
  bool over() const { return bytes() > limit_; }

  // Where the nodes start: after the header, the bounds and any unconfirmed prefixes.
  std::size_t nodes_at() const {
    return kHeaderBytes + 2 * ends_.size() + (has_unconfirmed_ ? ends_.size() : 0);
  }

  // The unconfirmed prefix of keys [lo, hi) after the `depth` the tree confirms: the bytes they
  // all share, if heads taken at `depth` would tie on two neighbours (else none is needed).
  std::uint8_t unconfirmed_prefix(std::size_t lo, std::size_t hi, std::size_t depth) const {
    if (hi - lo < 2) return 0;
    bool ties = false;
    for (std::size_t i = lo; i + 1 < hi && !ties; ++i) ties = common(i, i + 2, depth) >= kHeadBytes;
    if (!ties) return 0;
    return static_cast<std::uint8_t>(std::min(common(lo, hi, depth), kMaxUnconfirmed));
  }

  // The key's byte at `depth`, or -1 where it has ended.
  int byte_of(std::size_t i, std::size_t depth) const {
    return depth < keys_[i].size() ? static_cast<std::uint8_t>(keys_[i][depth]) : -1;
  }

  // Common prefix of keys [lo, hi) from `depth` (sorted: the first and the last key's).
  std::size_t common(std::size_t lo, std::size_t hi, std::size_t depth) const {
    const std::string_view a = keys_[lo], b = keys_[hi - 1];
    std::size_t n = depth;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    return n - depth;
  }

  // Can a separator put [a, m) and [m, b) into different children? Bytes up to the separator go
  // left, and an ended key goes left whatever the separator, so 0 cannot start the right side.
  bool splits_at(std::size_t m, std::size_t depth) const {
    const int left = byte_of(m - 1, depth);
    const int right = byte_of(m, depth);
    return std::max(left, 0) < right;
  }

  // The split of [a, b) at the byte of the key at its middle (or, for a part of more than two
  // thresholds, at a multiple of the threshold, so that parts fill up), searching both ways for
  // the split nearer to it; 0 if no byte at this depth tells the keys apart.
  std::size_t split(std::size_t a, std::size_t b, std::size_t depth) const {
    const std::size_t parts = (b - a + threshold_ - 1) / threshold_;
    const std::size_t target = a + (b - a) * (parts / 2) / std::max<std::size_t>(parts, 1);
    const std::size_t mid = std::clamp(target, a + 1, b - 1);
    const int v = byte_of(mid, depth);
    std::size_t lower = mid, upper = mid + 1;
    while (lower > a && byte_of(lower - 1, depth) == v) --lower;
    while (upper < b && byte_of(upper, depth) == v) ++upper;
    const bool lower_ok = lower > a && splits_at(lower, depth);
    const bool upper_ok = upper < b && splits_at(upper, depth);
    if (lower_ok && upper_ok) return mid - lower <= upper - mid ? lower : upper;
    return lower_ok ? lower : upper_ok ? upper : 0;
  }

  // Do keys [lo, hi) at `depth` become one range (no node)?
  bool leaf(std::size_t lo, std::size_t hi, std::size_t depth) const {
    if (hi - lo <= threshold_) return true;
    if (spans_ && common(lo, hi, depth) > 0) return false;
    return split(lo, hi, depth) == 0;
  }

  std::uint16_t new_range(std::size_t hi, std::size_t depth) {
    if (want_unconfirmed_) {
      const std::size_t lo = ends_.empty() ? 0 : ends_.back();
      unconfirmed_.push_back(unconfirmed_prefix(lo, hi, depth));
    }
    ends_.push_back(static_cast<std::uint16_t>(hi));
    skips_.push_back(static_cast<std::uint16_t>(depth));
    return static_cast<std::uint16_t>(ends_.size() - 1);
  }

  // Bytes [depth, depth + n) of key `lo`, as a span node (with its header) or not.
  void put_bytes(std::size_t lo, std::size_t depth, std::size_t n, bool span_node) {
    if (span_node) nodes_.push_back(static_cast<std::uint8_t>(n));
    if (n == 0) return;  // (a page without keys has no key `lo`)
    const std::string_view k = keys_[lo];
    nodes_.insert(nodes_.end(), k.begin() + static_cast<std::ptrdiff_t>(depth),
                  k.begin() + static_cast<std::ptrdiff_t>(depth + n));
  }

  void push16(std::uint16_t v) {
    const std::size_t at = nodes_.size();
    nodes_.resize(at + 2);
    std::memcpy(nodes_.data() + at, &v, 2);
  }

  // The parts of a decision node over [lo, hi): split the largest splittable part above the
  // threshold until the node is full. Part i is [cuts[i], cuts[i+1]).
  std::vector<std::size_t> parts(std::size_t lo, std::size_t hi, std::size_t depth) const {
    std::vector<std::size_t> cuts = {lo, hi};
    std::vector<bool> fixed = {false};  // part i cannot be split at this depth
    while (cuts.size() - 1 < kMaxSeparators + 1) {
      std::size_t best = cuts.size();
      for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
        const std::size_t size = cuts[i + 1] - cuts[i];
        if (!fixed[i] && size > threshold_ &&
            (best == cuts.size() || size > cuts[best + 1] - cuts[best]))
          best = i;
      }
      if (best == cuts.size()) break;
      const std::size_t m = split(cuts[best], cuts[best + 1], depth);
      if (m == 0) {
        fixed[best] = true;
        continue;
      }
      cuts.insert(cuts.begin() + static_cast<std::ptrdiff_t>(best) + 1, m);
      fixed.insert(fixed.begin() + static_cast<std::ptrdiff_t>(best) + 1, false);
    }
    return cuts;
  }

  // Writes the subtree over keys [lo, hi) at `depth`: its span, then a decision node (or the
  // terminal of a single range), then the children's subtrees.
  void emit_node(std::size_t lo, std::size_t hi, std::size_t depth) {
    if (over()) return;  // the caller retries coarser; stop early
    // The shared prefix: span nodes, and the last few bytes folded into the decision node.
    std::size_t prefix = 0;
    if (hi - lo >= 2 && spans_) {  // a range of one key gains nothing from a span
      std::size_t span = common(lo, hi, depth);
      while (span > kMaxPrefix) {
        const std::size_t n = std::min<std::size_t>(span, kMaxSpan);
        put_bytes(lo, depth, n, true);
        depth += n;
        span -= n;
      }
      prefix = span;
    }
    const std::size_t prefix_at = depth;
    depth += prefix;  // the decision's separators are bytes after its prefix
    const std::vector<std::size_t> cuts =
        hi - lo <= threshold_ ? std::vector<std::size_t>{lo, hi} : parts(lo, hi, depth);
    const std::size_t n = cuts.size() - 2;
    bool all_leaves = true;
    for (std::size_t i = 0; i <= n && all_leaves; ++i)
      all_leaves = n == 0 || leaf(cuts[i], cuts[i + 1], depth);
    nodes_.push_back(static_cast<std::uint8_t>(kDecisionFlag | (all_leaves ? kLeafFlag : 0) |
                                               prefix << kPrefixShift | n));
    put_bytes(lo, prefix_at, prefix, false);
    for (std::size_t i = 1; i <= n; ++i) {
      // The last byte on the left, or (an ended key alone there) just below the first right one.
      const int left = byte_of(cuts[i] - 1, depth);
      nodes_.push_back(static_cast<std::uint8_t>(left >= 0 ? left : byte_of(cuts[i], depth) - 1));
    }
    if (all_leaves) {
      push16(static_cast<std::uint16_t>(ends_.size()));
      for (std::size_t i = 0; i <= n; ++i) new_range(cuts[i + 1], depth);
      return;
    }
    const std::size_t payloads = nodes_.size();
    nodes_.resize(payloads + 2 * (n + 1));
    for (std::size_t i = 0; i <= n; ++i) {
      std::uint16_t p;
      if (leaf(cuts[i], cuts[i + 1], depth)) {
        p = static_cast<std::uint16_t>(kRangeTag | new_range(cuts[i + 1], depth));
      } else {
        p = static_cast<std::uint16_t>(nodes_.size());  // relative until write()
        child_offsets_.push_back(payloads + 2 * i);
        emit_node(cuts[i], cuts[i + 1], depth);
      }
      std::memcpy(nodes_.data() + payloads + 2 * i, &p, 2);
      if (over()) return;
    }
  }

  std::vector<std::string_view> keys_;
  unsigned threshold_;
  bool spans_;
  std::size_t limit_ = 0;
  std::vector<std::uint8_t> nodes_;
  std::vector<std::size_t> child_offsets_;  // where node_ holds a child offset to relocate
  std::vector<std::uint16_t> ends_;
  std::vector<std::uint16_t> skips_;
  bool want_unconfirmed_;
  bool has_unconfirmed_ = false;  // the array is written (decided once the nodes are)
  std::vector<std::uint8_t> unconfirmed_;
};

void adjust(std::span<const std::byte> region, std::uint16_t range, int delta,
            const std::function<void(std::size_t, std::uint16_t)>& store) {
  const Header h = read_header(region);
  for (std::size_t i = range; i < h.ranges; ++i) {
    const std::size_t at = kHeaderBytes + 2 * i;
    store(at, static_cast<std::uint16_t>(load16(region, at) + delta));
  }
}

}  // namespace

BuildResult build(const KeyAt& key, std::size_t count, unsigned threshold, std::span<std::byte> out,
                  Unconfirmed unconfirmed) {
  std::vector<std::string_view> keys(count);
  for (std::size_t i = 0; i < count; ++i) keys[i] = key(i);
  const std::size_t limit = std::min(out.size(), kMaxRegion);
  if (count > 0xFFFF) return {};
  // Coarser and coarser ranges until the tree fits; at last one range without a span.
  for (std::size_t t = std::max(threshold, 1u);; t *= 2) {
    const bool last = t >= count;
    Builder b(keys, static_cast<unsigned>(std::min<std::size_t>(t, 0xFFFF)), true, unconfirmed);
    if (b.run(limit)) return b.write(out);
    if (last) break;
  }
  Builder b(std::move(keys), 0xFFFF, false, Unconfirmed::kNone);
  if (b.run(limit)) return b.write(out);
  return {};
}

namespace detail {

unsigned first_at_or_above(const std::byte* separators, std::size_t readable, unsigned count,
                           std::uint8_t k) noexcept {
  return separators_at_or_above(separators, readable, count, k);
}

}  // namespace detail

RangeHit lookup(std::span<const std::byte> region, std::string_view key,
                std::size_t slot_count) noexcept {
  const Header h = read_header(region);
  if (h.ranges == 0) return whole_page(slot_count);
  std::size_t pos = h.root;
  std::size_t depth = 0;
  while (pos < region.size()) {
    const std::uint8_t header = byte_at(region, pos);
    if ((header & kDecisionFlag) == 0) {
      const std::size_t span = header;
      if (pos + 1 + span >= region.size()) break;  // a span's child follows it
      const Prefix m = match_prefix(region, pos + 1, span, key, depth);
      if (m != Prefix::kMatched)
        return extreme_leaf(region, h, pos + 1 + span, m == Prefix::kAbove, slot_count);
      depth += span;
      pos += 1 + span;
      continue;
    }
    Decision d;
    if (!read_decision(region, pos, d)) break;
    if (d.prefix > 0) {
      const Prefix m = match_prefix(region, pos + 1, d.prefix, key, depth);
      if (m != Prefix::kMatched)
        return extreme_leaf(region, h, pos, m == Prefix::kAbove, slot_count);
      depth += d.prefix;
    }
    const unsigned child =
        depth < key.size() ? child_for(region, d, static_cast<std::uint8_t>(key[depth])) : 0;
    std::size_t next;
    if (follow(region, d, child, next)) {
      return finish(region, h, next,
                    static_cast<std::uint16_t>(std::min<std::size_t>(depth, kNoSkip - 1)),
                    slot_count);
    }
    if (next <= pos) break;
    pos = next;
  }
  return whole_page(slot_count);
}

RangeArray range_array(std::span<const std::byte> region) noexcept {
  const Header h = read_header(region);
  return {h.ranges == 0 ? 0 : kHeaderBytes, h.ranges};
}

void after_insert(std::span<const std::byte> region, std::uint16_t range,
                  const std::function<void(std::size_t, std::uint16_t)>& store) {
  adjust(region, range, +1, store);
}

void after_erase(std::span<const std::byte> region, std::uint16_t range,
                 const std::function<void(std::size_t, std::uint16_t)>& store) {
  adjust(region, range, -1, store);
}

std::uint16_t range_of_slot(std::span<const std::byte> region, std::size_t index) noexcept {
  const Header h = read_header(region);
  // Range r begins at bound[r-1]: count the bounds before the last range that are <= index.
  std::size_t lo = 0, hi = h.ranges == 0 ? 0 : h.ranges - 1;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (load16(region, kHeaderBytes + 2 * mid) <= index)
      lo = mid + 1;
    else
      hi = mid;
  }
  return static_cast<std::uint16_t>(lo);
}

TreeShape shape(std::span<const std::byte> region) noexcept {
  TreeShape s;
  s.bytes = region.size();
  const Header h = read_header(region);
  s.ranges = h.ranges;
  if (h.ranges == 0) return s;
  for (std::size_t i = 0; i < h.ranges && h.unconfirmed != 0; ++i)
    s.unconfirmed += byte_at(region, h.unconfirmed + i) > 0 ? 1 : 0;
  // The nodes lie back to back from the root to the end of the region.
  std::size_t pos = h.root;
  while (pos < region.size()) {
    const std::uint8_t header = byte_at(region, pos);
    if ((header & kDecisionFlag) == 0) {
      ++s.span_nodes;
      s.span_bytes += header;
      pos += 1 + header;
      continue;
    }
    Decision d;
    if (!read_decision(region, pos, d)) break;
    ++s.decision_nodes;
    s.prefix_bytes += d.prefix;
    pos = d.end();
  }
  return s;
}

}  // namespace pmcached::engine::b2tree

// The embedded tree's bytes (docs/LAYOUTS.md, "b2tree embedded tree"), all integers u16
// little-endian (native, as every page field), unaligned:
//
//   [0, 2)        u16 R              ranges (>= 1)
//   [2, 4)        u16 root           offset of the root node (= 4 + 2R as built)
//   [4, 4 + 2R)   u16 bound[R]       exclusive upper slot bound of each range; range r is
//                                    [r == 0 ? 0 : bound[r-1], bound[r])
//   [root, size)  the nodes in pre-order: every child lies after its parent (offsets only grow).
//
// Nodes (a one-byte header; bit 7 tells the kind):
//   span      0b0LLLLLLL, then L (0..127) bytes; its only child follows directly. Longer common
//             prefixes are chains of spans.
//   decision  0b1000NNNN, then N (0..kMaxSeparators) separator bytes, then N + 1 u16 payloads.
//             A key byte b goes to the first child whose separator >= b, to the last child when b
//             is above them all; a key that has ended (no byte at the depth) to the first child.
//             A payload with bit 15 set is a range index (bits 0..14), else the offset of a child
//             node (> the node's own offset). A decision with N = 0 is the terminal node that
//             follows a span whose subtree is one range.
// A decision node of 8 separators is 27 bytes, one with a single separator 6 bytes; a decision
// plus an empty span (seed 004 §3.5's x) at most 28. Tagging each payload rather than the whole
// node saves a 3-byte terminal node and a hop wherever a decision mixes ranges and subtrees.
#include "engine/b2tree/embedded_tree.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace pmcached::engine::b2tree {
namespace {

constexpr std::size_t kHeaderBytes = 4;
constexpr unsigned kMaxSeparators = 8;  // a decision node stays within half a cache line
constexpr unsigned kMaxSpan = 127;
constexpr std::uint8_t kDecisionFlag = 0x80;
constexpr std::uint16_t kRangeTag = 0x8000;
// Offsets and range indexes are 15 bits: the region is at most this long.
constexpr std::size_t kMaxRegion = 0x7FFF;

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
};

Header read_header(std::span<const std::byte> region) noexcept {
  if (region.size() < kHeaderBytes) return {};
  const std::size_t ranges = load16(region, 0);
  const std::size_t root = load16(region, 2);
  if (ranges == 0 || kHeaderBytes + 2 * ranges > region.size() || root < kHeaderBytes + 2 * ranges)
    return {};
  return {ranges, root};
}

// ---- lookup ----

RangeHit whole_page(std::size_t slot_count) noexcept {
  return {0, 0, static_cast<std::uint16_t>(std::min<std::size_t>(slot_count, 0xFFFF)), kNoSkip};
}

RangeHit finish(std::span<const std::byte> region, const Header& h, std::size_t range,
                std::uint16_t skip, std::size_t slot_count) noexcept {
  if (range >= h.ranges) return whole_page(slot_count);
  const std::size_t limit = std::min<std::size_t>(slot_count, 0xFFFF);
  const std::size_t end = std::min<std::size_t>(load16(region, kHeaderBytes + 2 * range), limit);
  const std::size_t begin =
      range == 0 ? 0
                 : std::min<std::size_t>(load16(region, kHeaderBytes + 2 * (range - 1)), end);
  return {static_cast<std::uint16_t>(range), static_cast<std::uint16_t>(begin),
          static_cast<std::uint16_t>(end), skip};
}

// Where a decision node's parts lie; false if the node does not fit the region.
struct Decision {
  std::size_t separators;  // offset of the first separator
  std::size_t payloads;    // offset of the first payload
  unsigned count;          // separators
};

bool read_decision(std::span<const std::byte> region, std::size_t pos, Decision& d) noexcept {
  const unsigned n = byte_at(region, pos) & 0x7F;
  if (n > kMaxSeparators) return false;
  d = {pos + 1, pos + 1 + n, n};
  return d.payloads + 2 * (n + 1) <= region.size();
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
    const std::uint16_t p = load16(region, d.payloads + 2 * (maximum ? d.count : 0));
    if (p & kRangeTag) return finish(region, h, p & ~kRangeTag, kNoSkip, slot_count);
    if (p <= pos) break;
    pos = p;
  }
  return whole_page(slot_count);
}

// ---- building ----

class Builder {
 public:
  Builder(std::vector<std::string_view> keys, unsigned threshold, bool spans)
      : keys_(std::move(keys)), threshold_(std::max(threshold, 1u)), spans_(spans) {}

  // Builds the whole tree; false if it grew past `limit` bytes.
  bool run(std::size_t limit) {
    limit_ = limit;
    emit_node(0, keys_.size(), 0);
    return !over();
  }

  std::size_t bytes() const { return kHeaderBytes + 2 * ends_.size() + nodes_.size(); }

  BuildResult write(std::span<std::byte> out) const {
    BuildResult r;
    r.bytes = bytes();
    r.range_end = ends_;
    r.range_skip = skips_;
    const std::size_t base = kHeaderBytes + 2 * ends_.size();
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
    put16(0, ends_.size());
    put16(2, base);
    for (std::size_t i = 0; i < ends_.size(); ++i) put16(kHeaderBytes + 2 * i, ends_[i]);
    std::memcpy(out.data() + base, nodes.data(), nodes.size());
    return r;
  }

 private:
  bool over() const { return bytes() > limit_; }

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

  // The split of [a, b) at the middle key's byte, searching both ways for the more even one;
  // 0 if the keys cannot be told apart at this depth.
  std::size_t split(std::size_t a, std::size_t b, std::size_t depth) const {
    const std::size_t mid = a + (b - a) / 2;
    const int v = byte_of(mid, depth);
    std::size_t lower = mid, upper = mid + 1;
    while (lower > a && byte_of(lower - 1, depth) == v) --lower;
    while (upper < b && byte_of(upper, depth) == v) ++upper;
    const bool lower_ok = lower > a && splits_at(lower, depth);
    const bool upper_ok = upper < b && splits_at(upper, depth);
    if (lower_ok && upper_ok) return mid - lower <= upper - mid ? lower : upper;
    return lower_ok ? lower : upper_ok ? upper : 0;
  }

  std::uint16_t new_range(std::size_t hi, std::size_t depth) {
    ends_.push_back(static_cast<std::uint16_t>(hi));
    skips_.push_back(static_cast<std::uint16_t>(depth));
    return static_cast<std::uint16_t>(kRangeTag | (ends_.size() - 1));
  }

  bool is_leaf(std::size_t lo, std::size_t hi, std::size_t depth) const {
    return hi - lo <= threshold_ || split(lo, hi, depth) == 0;
  }

  void put16(std::size_t at, std::uint16_t v) { std::memcpy(nodes_.data() + at, &v, 2); }

  // The payload that leads to keys [lo, hi) at `depth`: a range, or a node written now.
  std::uint16_t child(std::size_t lo, std::size_t hi, std::size_t depth) {
    const bool span = spans_ && hi - lo >= 2 && common(lo, hi, depth) > 0;
    if (!span && is_leaf(lo, hi, depth)) return new_range(hi, depth);
    const auto at = static_cast<std::uint16_t>(nodes_.size());
    emit_node(lo, hi, depth);
    return at;
  }

  void emit_node(std::size_t lo, std::size_t hi, std::size_t depth) {
    if (over()) return;  // the caller retries coarser; stop early
    if (hi - lo >= 2 && spans_) {  // a range of one key gains nothing from a span
      std::size_t span = common(lo, hi, depth);
      while (span > 0) {
        const std::size_t n = std::min<std::size_t>(span, kMaxSpan);
        nodes_.push_back(static_cast<std::uint8_t>(n));
        const std::string_view k = keys_[lo];
        nodes_.insert(nodes_.end(), k.begin() + depth, k.begin() + depth + n);
        depth += n;
        span -= n;
      }
    }
    if (lo == hi || is_leaf(lo, hi, depth)) {
      nodes_.push_back(kDecisionFlag);
      const std::size_t at = nodes_.size();
      nodes_.resize(at + 2);
      put16(at, new_range(hi, depth));
      return;
    }
    // Parts of the node: split the largest splittable part above the threshold until full.
    std::vector<std::size_t> cuts = {lo, hi};  // part i is [cuts[i], cuts[i+1])
    std::vector<bool> fixed = {false};         // part i cannot be split further
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
    const std::size_t n = cuts.size() - 2;
    nodes_.push_back(static_cast<std::uint8_t>(kDecisionFlag | n));
    for (std::size_t i = 1; i <= n; ++i) {
      // The last byte on the left, or (an ended key alone there) just below the first right one.
      const int left = byte_of(cuts[i] - 1, depth);
      nodes_.push_back(static_cast<std::uint8_t>(left >= 0 ? left : byte_of(cuts[i], depth) - 1));
    }
    const std::size_t payloads = nodes_.size();
    nodes_.resize(payloads + 2 * (n + 1));
    for (std::size_t i = 0; i <= n; ++i) {
      const std::size_t before = nodes_.size();
      const std::uint16_t p = child(cuts[i], cuts[i + 1], depth);
      if (!(p & kRangeTag) && nodes_.size() > before) child_offsets_.push_back(payloads + 2 * i);
      put16(payloads + 2 * i, p);
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

BuildResult build(const KeyAt& key, std::size_t count, unsigned threshold,
                  std::span<std::byte> out) {
  std::vector<std::string_view> keys(count);
  for (std::size_t i = 0; i < count; ++i) keys[i] = key(i);
  const std::size_t limit = std::min(out.size(), kMaxRegion);
  if (count > 0xFFFF) return {};
  // Coarser and coarser ranges until the tree fits; at last one range without a span.
  for (std::size_t t = std::max(threshold, 1u);; t *= 2) {
    const bool last = t >= count;
    Builder b(keys, static_cast<unsigned>(std::min<std::size_t>(t, 0xFFFF)), true);
    if (b.run(limit)) return b.write(out);
    if (last) break;
  }
  Builder b(std::move(keys), 0xFFFF, false);
  if (b.run(limit)) return b.write(out);
  return {};
}

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
      for (std::size_t i = 0; i < span; ++i) {
        if (depth + i >= key.size())  // ended inside the span: below the subtree
          return extreme_leaf(region, h, pos + 1 + span, false, slot_count);
        const auto k = static_cast<std::uint8_t>(key[depth + i]);
        const std::uint8_t s = byte_at(region, pos + 1 + i);
        if (k != s) return extreme_leaf(region, h, pos + 1 + span, k > s, slot_count);
      }
      depth += span;
      pos += 1 + span;
      continue;
    }
    Decision d;
    if (!read_decision(region, pos, d)) break;
    unsigned child = 0;
    if (depth < key.size()) {
      const auto k = static_cast<std::uint8_t>(key[depth]);
      while (child < d.count && byte_at(region, d.separators + child) < k) ++child;
    }
    const std::uint16_t p = load16(region, d.payloads + 2 * child);
    if (p & kRangeTag) {
      return finish(region, h, p & ~kRangeTag,
                    static_cast<std::uint16_t>(std::min<std::size_t>(depth, kNoSkip - 1)),
                    slot_count);
    }
    if (p <= pos) break;
    pos = p;
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
    pos = d.payloads + 2 * (d.count + 1);
  }
  return s;
}

}  // namespace pmcached::engine::b2tree

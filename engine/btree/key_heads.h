// Key heads: a search aid for an inner node whose separator keys live out of line (PM key blocks,
// heap strings), so that its binary search reads the node instead of one out-of-line key per
// probe — each a likely cache miss, since nodes and keys are allocated apart.
//
// The node keeps a prefix that all its separators share (KeyPrefix, at most kMaxPrefix bytes) and,
// per separator, its head: the 4 bytes after that prefix as a big-endian integer, zero-padded.
// Heads order like the keys they come from (a shorter key's zero padding makes its head smaller or
// equal), so between keys that share the prefix unequal heads decide a comparison and only equal
// heads need the full keys. A search key that does not share the prefix is below or above every
// separator of the node, and no key is read at all. mc-benchmark keys (`mykey_rand%012d`) share 16
// bytes or more; the next 4 nearly always tell two separators of a node apart.
//
// Upkeep (the node's owner): the prefix must be a prefix of every separator a search compares,
// and each head that separator's head for the current prefix length. A new separator that does
// not share the prefix shortens it (shrink_to), and then every head must be recomputed
// (refresh_heads).
//
// Plain data and pure functions; KeyPrefix is part of the wB+-Tree's PM inner node layout.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace pmcached::engine::btree {

inline constexpr std::size_t kMaxPrefix = 55;  // KeyPrefix is 56 bytes

struct KeyPrefix {
  std::uint8_t len;
  char bytes[kMaxPrefix];

  [[nodiscard]] std::string_view view() const noexcept { return {bytes, len}; }
  // Becomes `key`'s first bytes (at most kMaxPrefix): the prefix of a node with one separator.
  void assign(std::string_view key) noexcept {
    len = static_cast<std::uint8_t>(std::min(key.size(), kMaxPrefix));
    std::memcpy(bytes, key.data(), len);
  }
  // Shortens to what it has in common with `key`; true if it got shorter. (A length past
  // kMaxPrefix, which only a node never initialised can show, shrinks too.)
  bool shrink_to(std::string_view key) noexcept {
    const std::size_t n = std::min({std::size_t{len}, key.size(), kMaxPrefix});
    std::size_t common = 0;
    while (common < n && bytes[common] == key[common]) ++common;
    if (common == len) return false;
    len = static_cast<std::uint8_t>(common);
    return true;
  }
};
static_assert(sizeof(KeyPrefix) == 56);

// The 4 bytes of `key` after its first `offset`, big-endian, zero-padded.
[[nodiscard]] inline std::uint32_t head_after(std::string_view key, std::size_t offset) noexcept {
  std::uint32_t head = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    const std::size_t at = offset + i;
    head = (head << 8) | (at < key.size() ? static_cast<unsigned char>(key[at]) : 0u);
  }
  return head;
}

// Recomputes `prefix` as the common prefix (at most kMaxPrefix bytes) of the separators at
// positions [first, last) and hands each one's head to set_head(p, head). An empty range leaves
// an empty prefix.
template <typename KeyAt, typename SetHead>
void refresh_heads(KeyPrefix& prefix, unsigned first, unsigned last, const KeyAt& key_at,
                   const SetHead& set_head) {
  prefix.len = 0;
  if (first < last) prefix.assign(key_at(first));
  for (unsigned p = first + 1; p < last; ++p) prefix.shrink_to(key_at(p));
  for (unsigned p = first; p < last; ++p) set_head(p, head_after(key_at(p), prefix.len));
}

// The first position p in [first, last) whose separator is > `key` (last if none): the upper
// bound of a node whose separators at positions [first, last) are sorted and share `prefix`.
// head_at(p) is the head of the separator at p; key_at(p) its key, read only on a head tie.
template <typename HeadAt, typename KeyAt>
[[nodiscard]] unsigned upper_bound(const KeyPrefix& prefix, std::string_view key, unsigned first,
                                   unsigned last, const HeadAt& head_at, const KeyAt& key_at) {
  const std::string_view shared = prefix.view();
  // A key that does not start with the prefix (a shorter one compares below it) compares with
  // every separator as with the prefix.
  const int order = key.substr(0, shared.size()).compare(shared);
  if (order != 0) return order < 0 ? first : last;
  const std::uint32_t head = head_after(key, shared.size());
  unsigned lo = first, hi = last;
  while (lo < hi) {
    const unsigned mid = lo + (hi - lo) / 2;
    const std::uint32_t h = head_at(mid);
    if (h < head || (h == head && key_at(mid) <= key)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace pmcached::engine::btree

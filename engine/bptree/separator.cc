#include "engine/bptree/separator.h"

#include <algorithm>
#include <vector>

namespace pmcached::engine::bptree {

std::size_t common_prefix(std::string_view a, std::string_view b) noexcept {
  const std::size_t n = std::min(a.size(), b.size());
  std::size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

std::string_view shortest_separator(std::string_view left, std::string_view right) noexcept {
  return right.substr(0, common_prefix(left, right) + 1);
}

SplitAt split_direction(bool leftmost, bool rightmost, std::size_t position,
                        std::size_t n) noexcept {
  if (rightmost && 2 * position >= n) return SplitAt::kLeftFull;
  if (leftmost && 2 * position < n) return SplitAt::kRightFull;
  return SplitAt::kMiddle;
}

std::size_t choose_split(std::span<const std::size_t> entry_bytes, std::size_t capacity, bool inner,
                         const std::function<std::size_t(std::size_t)>& separator_size,
                         SplitAt at) {
  const std::size_t n = entry_bytes.size();
  if (n < (inner ? 3u : 2u)) return 0;
  std::vector<std::size_t> prefix(n + 1, 0);  // prefix[k] = bytes of entries [0, k)
  for (std::size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + entry_bytes[i];
  const std::size_t total = prefix[n];
  const std::size_t first = 1;
  const std::size_t last = inner ? n - 2 : n - 1;
  auto left = [&](std::size_t k) { return prefix[k]; };
  auto right = [&](std::size_t k) { return total - prefix[inner ? k + 1 : k]; };
  auto fits = [&](std::size_t k) { return left(k) <= capacity && right(k) <= capacity; };
  auto distance = [](std::size_t a, std::size_t b) { return a > b ? a - b : b - a; };
  const std::size_t edge_fill = capacity * kEdgeFillTenths / 10;
  // How far split point k is from the target, in bytes.
  auto off_target = [&](std::size_t k) {
    switch (at) {
      case SplitAt::kLeftFull: return distance(left(k), edge_fill);
      case SplitAt::kRightFull: return distance(right(k), edge_fill);
      case SplitAt::kMiddle: break;
    }
    return distance(left(k), right(k));
  };

  std::size_t target = 0;
  for (std::size_t k = first; k <= last; ++k) {
    if (fits(k) && (target == 0 || off_target(k) < off_target(target))) target = k;
  }
  if (target == 0) return 0;
  if (at != SplitAt::kMiddle) return target;
  // The window: a tenth of the entries on each side of the middle (at least one).
  const std::size_t window = std::max<std::size_t>(1, n / 10);
  const std::size_t from = target > first + window ? target - window : first;
  const std::size_t to = std::min(last, target + window);
  std::size_t best = target;
  std::size_t best_size = separator_size(target);
  for (std::size_t k = from; k <= to; ++k) {
    if (k == target || !fits(k)) continue;
    const std::size_t size = separator_size(k);
    if (size < best_size || (size == best_size && distance(k, target) < distance(best, target))) {
      best = k;
      best_size = size;
    }
  }
  return best;
}

}  // namespace pmcached::engine::bptree

#include "engine/bptree/overflow.h"

#include <algorithm>
#include <cstring>

namespace pmcached::engine::bptree {

void encode_overflow_ref(const OverflowRef& ref, std::span<const std::byte> record,
                         std::byte* out) noexcept {
  std::memcpy(out, &ref.first, 8);
  std::memcpy(out + 8, &ref.last, 8);
  std::memcpy(out + 16, &ref.size, 8);
  const std::size_t prefix = std::min(record.size(), kOverflowPrefix);
  std::memcpy(out + kOverflowPrefixOffset, record.data(), prefix);
  std::memset(out + kOverflowPrefixOffset + prefix, 0, kOverflowPrefix - prefix);
}

OverflowRef decode_overflow_ref(std::span<const std::byte> payload) noexcept {
  return OverflowRef{load_value<std::uint64_t>(payload.data()),
                     load_value<std::uint64_t>(payload.data() + 8),
                     load_value<std::uint64_t>(payload.data() + 16)};
}

void write_overflow_page(PageChanges& page, PageId next,
                         std::span<const std::byte> bytes) noexcept {
  NodeWriter node(page);
  node.init(NodeKind::kOverflow, 0);
  page.store(kDataStartOffset, static_cast<std::uint32_t>(bytes.size()));
  node.set_link(next);
  page.write(kSlotsOffset, bytes.data(), bytes.size());
}

std::span<const std::byte> overflow_bytes(const std::byte* page) noexcept {
  return {page + kSlotsOffset, load_value<std::uint32_t>(page + kDataStartOffset)};
}

}  // namespace pmcached::engine::bptree

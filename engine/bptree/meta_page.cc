#include "engine/bptree/meta_page.h"

namespace pmcached::engine::bptree {

bool MetaPage::valid(const std::byte* page) noexcept {
  return load_value<std::uint16_t>(page + kKindOffset) ==
             static_cast<std::uint16_t>(NodeKind::kMeta) &&
         load_value<std::uint64_t>(page + 24) == kMetaMagic;
}

MetaFields MetaPage::read(const std::byte* page) noexcept {
  return MetaFields{
      load_value<std::uint64_t>(page + kRoot),      load_value<std::uint64_t>(page + kRootLevel),
      load_value<std::uint64_t>(page + kHighWater), load_value<std::uint64_t>(page + kFreeHead),
      load_value<std::uint64_t>(page + kFreeCount), load_value<std::uint64_t>(page + kItems),
      load_value<std::uint64_t>(page + kStackSize)};
}

void MetaPage::format(PageChanges& page, const MetaFields& fields, std::uint16_t version) noexcept {
  const auto kind = static_cast<std::uint16_t>(NodeKind::kMeta);
  page.fill(kKindOffset, std::byte{0}, page.page_size() - kKindOffset);
  page.store(kKindOffset, kind);
  page.store(kKindOffset + 2, version);
  page.store(24, kMetaMagic);
  page.store(kRoot, fields.root);
  page.store(kRootLevel, fields.root_level);
  page.store(kHighWater, fields.high_water);
  page.store(kFreeHead, fields.free_head);
  page.store(kFreeCount, fields.free_count);
  page.store(kItems, fields.items);
  page.store(kStackSize, fields.stack_size);
}

}  // namespace pmcached::engine::bptree

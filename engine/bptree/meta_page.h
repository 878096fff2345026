// MetaPage: page 1 of a bptree page file, the tree's roots.
//
// Layout version 1 (after the 16-byte buffer::PageHeader):
//   16 u16 kind (NodeKind::kMeta)   18 u16 layout version (1)   20 u32 reserved
//   24 u64 magic "PMCBTREE"
//   32 u64 root page                40 u64 root level (0: the root is a leaf)
//   48 u64 high-water mark: the first page id never allocated
//   56 u64 free list head (0: empty), linked through the pages' link field
//   64 u64 free pages on the list   72 u64 items in the tree
//   [kMetaEngineArea, page end) belongs to the engine glue (zero when formatted).
// Every field changes only through PageChanges, inside the mini-transaction of the command that
// changes it (the meta page is latched exclusively last, after every tree page: see btree.h).
//
// Thread safety: none; the caller latches the page.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/bptree/node.h"

namespace pmcached::engine::bptree {

inline constexpr PageId kMetaPage = 1;
inline constexpr std::uint64_t kMetaMagic = 0x4545525442434d50ull;  // "PMCBTREE" little-endian
inline constexpr std::uint16_t kMetaVersion = 1;
inline constexpr std::size_t kMetaEngineArea = 128;

struct MetaFields {
  PageId root = 0;
  std::uint64_t root_level = 0;
  PageId high_water = 0;
  PageId free_head = 0;
  std::uint64_t free_count = 0;
  std::uint64_t items = 0;
};

class MetaPage {
 public:
  static constexpr std::size_t kRoot = 32;
  static constexpr std::size_t kRootLevel = 40;
  static constexpr std::size_t kHighWater = 48;
  static constexpr std::size_t kFreeHead = 56;
  static constexpr std::size_t kFreeCount = 64;
  static constexpr std::size_t kItems = 72;

  // True if the page carries the meta page's kind, magic and version.
  [[nodiscard]] static bool valid(const std::byte* page) noexcept;
  [[nodiscard]] static MetaFields read(const std::byte* page) noexcept;
  // Formats an empty meta page with these fields.
  static void format(PageChanges& page, const MetaFields& fields) noexcept;
  static void set(PageChanges& page, std::size_t field, std::uint64_t value) noexcept {
    page.store(field, value);
  }
};

}  // namespace pmcached::engine::bptree

// MetaPage: page 1 of a bptree page file: the roots, the page allocator's state, the item count.
//
// Layout version 1 (after the 16-byte buffer::PageHeader):
//   16 u16 kind (NodeKind::kMeta)   18 u16 layout version of the file's pages: 1 bptree
//                                   pages, 3 b2tree pages (wide slots, engine/bptree/node.h,
//                                   and the embedded tree of engine/b2tree/embedded_tree.cc)
//   20 u32 reserved
//   24 u64 magic "PMCBTREE"
//   32 u64 root page                40 u64 root level (0: the root is a leaf)
//   48 u64 high-water mark: the first page id never allocated
//   56 u64 free list head (0: empty): freed overflow chains, linked through the pages' link
//   64 u64 pages on the free list   72 u64 items in the tree
//   80 u64 pages on the free stack
//   [kMetaEngineArea, kFreeStack) belongs to the engine glue (zero when formatted)
//   [kFreeStack, page end) the free stack: ids of freed tree pages, u64 each
// Freed tree pages wait on the stack so that allocating one needs no read of it (a cold free page
// would cost an I/O just for its link; and the meta page's holder never latches a page that was
// a tree page, which keeps the latch order simple). Freed overflow chains join the list whole, by
// their last page's link. A tree page freed while the stack is full joins the list too.
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
inline constexpr std::uint16_t kMetaVersion = 1;                    // a bptree page file
// A b2tree page file (v1 had narrow heads, v2 an embedded tree with a root offset and no prefixes
// in decision nodes, v3 no unconfirmed range prefixes: a v3 reader would take a v4 tree's header
// word for too many ranges and search whole pages with the wrong heads).
inline constexpr std::uint16_t kB2MetaVersion = 4;
inline constexpr std::size_t kMetaEngineArea = 128;
inline constexpr std::size_t kFreeStack = 256;

struct MetaFields {
  PageId root = 0;
  std::uint64_t root_level = 0;
  PageId high_water = 0;
  PageId free_head = 0;
  std::uint64_t free_count = 0;  // on the list
  std::uint64_t items = 0;
  std::uint64_t stack_size = 0;  // on the stack

  // Freed pages waiting for reuse, on the stack and the list.
  [[nodiscard]] std::uint64_t free_pages() const noexcept { return free_count + stack_size; }
};

class MetaPage {
 public:
  static constexpr std::size_t kRoot = 32;
  static constexpr std::size_t kRootLevel = 40;
  static constexpr std::size_t kHighWater = 48;
  static constexpr std::size_t kFreeHead = 56;
  static constexpr std::size_t kFreeCount = 64;
  static constexpr std::size_t kItems = 72;
  static constexpr std::size_t kStackSize = 80;

  [[nodiscard]] static constexpr std::size_t stack_capacity(std::size_t page_size) noexcept {
    return (page_size - kFreeStack) / 8;
  }
  // True if the page carries the meta page's kind and magic (of any layout version).
  [[nodiscard]] static bool valid(const std::byte* page) noexcept;
  [[nodiscard]] static std::uint16_t version(const std::byte* page) noexcept {
    return load_value<std::uint16_t>(page + kKindOffset + 2);
  }
  [[nodiscard]] static MetaFields read(const std::byte* page) noexcept;
  [[nodiscard]] static PageId stack_entry(const std::byte* page, std::size_t i) noexcept {
    return load_value<std::uint64_t>(page + kFreeStack + 8 * i);
  }
  // Formats an empty meta page with these fields (and an empty stack).
  static void format(PageChanges& page, const MetaFields& fields,
                     std::uint16_t version = kMetaVersion) noexcept;
  static void set(PageChanges& page, std::size_t field, std::uint64_t value) noexcept {
    page.store(field, value);
  }
  static void set_stack_entry(PageChanges& page, std::size_t i, PageId id) noexcept {
    page.store(kFreeStack + 8 * i, id);
  }
};

}  // namespace pmcached::engine::bptree

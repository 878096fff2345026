// An optimistic read (BTree::read, seed 004 §3.6) searches a page that a writer, loader or
// evictor may be changing under it: the page may hold any bytes. Node's reads on any bytes must
// end, throw nothing, and stay within buffer::kOptimisticReach of the page's start (the pool's
// memory extends that far past its last frame). Each page here lives at the start of a heap
// buffer of exactly page size + kOptimisticReach bytes, like the pool's last frame, so ASan (the
// sanitizer build) reports any read past that. The pages: random bytes under a plausible header,
// and real leaf and inner pages (both layouts) with bytes flipped or overwritten.
#include <cstddef>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/bptree/node.h"
#include "engine/buffer/buffer_manager.h"
#include "engine/buffer/page_changes.h"

namespace pmcached::engine::bptree {
namespace {

using buffer::kOptimisticReach;

std::string random_key(std::mt19937& rng) {
  static const char* const kStarts[] = {"http://www.example.org/", "https://deb.debian.org/",
                                        "title ", ""};
  std::string key = kStarts[rng() % 4];
  const std::size_t tail = 1 + rng() % 20;
  for (std::size_t i = 0; i < tail; ++i) key += static_cast<char>("abz/._\x01\xff"[rng() % 8]);
  return key.substr(0, kMaxKeySize);
}

// A real page of `kind` (a b2tree page if `threshold` > 0) filled with random keys; adds them
// to `keys`.
void fill_real_page(std::mt19937& rng, std::byte* page, std::size_t page_size, NodeKind kind,
                    unsigned threshold, std::vector<std::string>& keys) {
  std::memset(page, 0, page_size);
  buffer::PageChanges changes(7, page, page_size);
  NodeWriter w(changes);
  w.init(kind, kind == NodeKind::kInner ? 1 : 0, threshold);
  const std::string payload(kind == NodeKind::kInner ? 8 : rng() % 60, 'p');
  for (int n = 0; n < 400; ++n) {
    const std::string key = random_key(rng);
    const SearchResult r = w.search(key);
    if (r.found) continue;
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(payload.data()),
                                           payload.size());
    if (!w.insert(r.index, key, bytes)) break;
    keys.push_back(key);
  }
  if (threshold > 0) w.rebuild_tree();
}

// Random bytes under a header that names a leaf or inner page, with a slot count and tree area
// that are small, plausible or as large as their fields allow.
void fill_random_page(std::mt19937& rng, std::byte* page, std::size_t page_size) {
  for (std::size_t i = 0; i < page_size; ++i) page[i] = static_cast<std::byte>(rng());
  const auto kind = static_cast<std::uint16_t>(rng() % 2 == 0 ? NodeKind::kLeaf : NodeKind::kInner);
  const auto count = static_cast<std::uint16_t>(rng() % 3 == 0 ? rng() : rng() % 64);
  const auto tree = static_cast<std::uint16_t>(rng() % 3 == 0 ? 0
                                               : rng() % 2    ? rng()
                                                              : rng() % 600);
  std::memcpy(page + kKindOffset, &kind, sizeof kind);
  std::memcpy(page + kCountOffset, &count, sizeof count);
  std::memcpy(page + kTreeBytesOffset, &tree, sizeof tree);
}

// Flips bytes, or overwrites a 2-byte field with a random value, anywhere in the first part of
// the page (header, tree, slots) or in the records.
void damage(std::mt19937& rng, std::byte* page, std::size_t page_size) {
  const unsigned n = 1 + rng() % 6;
  for (unsigned i = 0; i < n; ++i) {
    const std::size_t at = rng() % 2 == 0 ? 16 + rng() % 1024 : rng() % (page_size - 1);
    if (rng() % 2 == 0) {
      page[at] ^= static_cast<std::byte>(1u << (rng() % 8));
    } else {
      const auto v = static_cast<std::uint16_t>(rng());
      std::memcpy(page + at, &v, sizeof v);
    }
  }
}

TEST(NodeFuzzTest, ReadsOnAnyPageBytesEndAndStayWithinTheOptimisticReach) {
  std::mt19937 rng(2026);
  std::size_t leaf_hits = 0;       // searches that found a key and read its payload
  std::size_t inner_descents = 0;  // child references read
  for (const std::size_t page_size : {std::size_t{4096}, std::size_t{65536}}) {
    const std::size_t total = page_size + kOptimisticReach;
    const std::unique_ptr<std::byte[]> memory(new std::byte[total]);
    std::byte* page = memory.get();
    for (std::size_t i = page_size; i < total; ++i) page[i] = static_cast<std::byte>(rng());
    const int pages = page_size == 4096 ? 6000 : 800;
    for (int n = 0; n < pages; ++n) {
      std::vector<std::string> keys;  // those of a real page
      const unsigned pick = rng() % 3;
      if (pick == 0) {
        fill_random_page(rng, page, page_size);
      } else {
        const NodeKind kind = rng() % 2 == 0 ? NodeKind::kLeaf : NodeKind::kInner;
        fill_real_page(rng, page, page_size, kind, rng() % 2 == 0 ? 0 : 1 + rng() % 32, keys);
        if (pick == 2 || rng() % 2 == 0) damage(rng, page, page_size);
      }
      const Node node(page, page_size);
      for (int k = 0; k < 16; ++k) {
        const std::string key =
            keys.empty() || rng() % 4 == 0 ? random_key(rng) : keys[rng() % keys.size()];
        const SearchResult r = node.search(key);
        ASSERT_LE(r.index, node.count());
        if (node.is_inner()) {
          const std::size_t i = node.child_index(key);
          ASSERT_LE(i, node.count());
          const std::size_t offset = node.child_offset(i);
          ASSERT_LE(offset + sizeof(std::uint64_t), total);
          volatile std::uint64_t child = load_value<std::uint64_t>(page + offset);
          (void)child;
          ++inner_descents;
        } else if (r.found && r.index < node.count()) {
          (void)node.flags(r.index);
          const std::span<const std::byte> payload = node.payload(r.index);
          ASSERT_LE(payload.data() + payload.size(), page + total);
          std::vector<std::byte> copy(payload.begin(), payload.end());  // reads every byte
          ++leaf_hits;
        }
      }
    }
  }
  // The real pages were searched down to their records and child references, not only
  // refused at the header.
  EXPECT_GT(leaf_hits, 10000u);
  EXPECT_GT(inner_descents, 10000u);
}

}  // namespace
}  // namespace pmcached::engine::bptree

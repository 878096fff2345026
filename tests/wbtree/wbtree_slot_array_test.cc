// The insert protocol's claim (wbtree_node.h, wbtree_entry.cc) at the granularity real PM gives:
// 8-byte words. An insert writes its new slot array under the old bitmap and commits the bitmap
// only after a fence, so a crash may persist any mix of the old and the new header words 1..7
// (word 0, the bitmap, is still the old one). The crash simulator persists whole lines, so it
// never builds such a mix; this test builds every one of them, for every count and insert
// position, and checks that a mix recovery would take for a valid slot array is the old one.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "engine/wbtree/wbtree_node.h"

namespace pmcached::engine::wbtree::testing {
namespace {

constexpr unsigned kWords = sizeof(NodeHeader) / 8;

NodeHeader mix(const NodeHeader& old_header, const NodeHeader& new_header, unsigned new_words) {
  std::uint64_t a[kWords], b[kWords];
  std::memcpy(a, &old_header, sizeof a);
  std::memcpy(b, &new_header, sizeof b);
  for (unsigned w = 1; w < kWords; ++w) {
    if ((new_words >> (w - 1)) & 1u) a[w] = b[w];
  }
  NodeHeader out;
  std::memcpy(&out, a, sizeof out);
  return out;
}

// A leaf header with `count` entries in use at random entry indexes, listed in a random order
// (the test does not need keys: the old order is the truth), stale bytes past count.
NodeHeader random_leaf(unsigned count, std::mt19937_64& rng) {
  NodeHeader h;
  std::memset(&h, 0, sizeof h);
  h.kind = kLeafKind;
  std::vector<unsigned> entries(kLeafFanout);
  for (unsigned e = 0; e < kLeafFanout; ++e) entries[e] = e;
  std::shuffle(entries.begin(), entries.end(), rng);
  h.bitmap = kValidBit;
  for (unsigned i = 0; i < count; ++i) {
    h.bitmap |= entry_bit(entries[i]);
    h.order[i] = static_cast<std::uint8_t>(entries[i]);
  }
  for (unsigned i = count; i < kInnerFanout; ++i) {
    h.order[i] = static_cast<std::uint8_t>(rng() % kLeafFanout);
  }
  h.count = static_cast<std::uint8_t>(count);
  return h;
}

// What WbTreeEngine::insert_entry writes before its commit (the bitmap not yet changed).
NodeHeader inserted(const NodeHeader& old_header, unsigned pos) {
  NodeHeader h = old_header;
  const std::uint64_t free_bits = ~h.bitmap & entry_mask(h.kind);
  const auto entry = static_cast<unsigned>(__builtin_ctzll(free_bits) - 1);
  std::memmove(&h.order[pos + 1], &h.order[pos], h.count - pos);
  h.order[pos] = static_cast<std::uint8_t>(entry);
  ++h.count;
  return h;
}

TEST(WbTreeSlotArray, EveryWordMixOfAnUncommittedInsertIsInvalidOrTheOldArray) {
  std::mt19937_64 rng(7);
  std::size_t mixes = 0, valid_mixes = 0, invalid_mixes = 0;
  for (int round = 0; round < 3; ++round) {
    for (unsigned count = 0; count < kLeafFanout; ++count) {
      const NodeHeader old_header = random_leaf(count, rng);
      ASSERT_TRUE(slot_array_valid(old_header));
      for (unsigned pos = 0; pos <= count; ++pos) {
        const NodeHeader new_header = inserted(old_header, pos);
        for (unsigned words = 0; words < (1u << (kWords - 1)); ++words) {
          const NodeHeader m = mix(old_header, new_header, words);
          ++mixes;
          if (!slot_array_valid(m)) {
            ++invalid_mixes;
            continue;
          }
          ++valid_mixes;
          ASSERT_EQ(m.count, old_header.count) << "count " << count << " pos " << pos;
          ASSERT_EQ(std::memcmp(m.order, old_header.order, count), 0)
              << "count " << count << " pos " << pos << " words " << words;
        }
      }
    }
  }
  // Both outcomes occur: the check is not vacuous.
  EXPECT_GT(valid_mixes, 0u);
  EXPECT_GT(invalid_mixes, 0u);
  EXPECT_EQ(valid_mixes + invalid_mixes, mixes);
}

}  // namespace
}  // namespace pmcached::engine::wbtree::testing

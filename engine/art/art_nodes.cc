// ArtNodes: decoding, filling and the in-place commits of the ART node types. See art_nodes.h.
#include "engine/art/art_nodes.h"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace pmcached::engine::art {

Entries Entries::with(Entry e) const noexcept {
  Entries out;
  unsigned i = 0;
  for (; i < size && at[i].chunk < e.chunk; ++i) out.push(at[i].chunk, at[i].ref);
  out.push(e.chunk, e.ref);
  for (; i < size; ++i) out.push(at[i].chunk, at[i].ref);
  return out;
}

Entries Entries::without(unsigned chunk) const noexcept {
  Entries out;
  for (unsigned i = 0; i < size; ++i) {
    if (at[i].chunk != chunk) out.push(at[i].chunk, at[i].ref);
  }
  return out;
}

std::uint64_t* ArtNodes::child_slot(std::uint64_t node, unsigned chunk) const noexcept {
  switch (type(node)) {
    case NodeType::kN4: {
      Node4* n = as<Node4>(node);
      const std::uint64_t word = __atomic_load_n(&n->keys_slots, __ATOMIC_RELAXED);
      for (unsigned j = 0; j < 4 && n4_slot(word, j) != 0; ++j) {
        if (n4_key(word, j) == chunk) return &n->children[n4_slot(word, j) - 1];
      }
      return nullptr;
    }
    case NodeType::kN16: {
      Node16* n = as<Node16>(node);
      std::uint32_t bits = static_cast<std::uint32_t>(n->bitmap & 0xFFFF);
#if defined(__SSE2__)
      const __m128i keys = _mm_loadu_si128(reinterpret_cast<const __m128i*>(n->keys));
      const __m128i same = _mm_cmpeq_epi8(keys, _mm_set1_epi8(static_cast<char>(chunk)));
      bits &= static_cast<std::uint32_t>(_mm_movemask_epi8(same));
      return bits == 0 ? nullptr : &n->children[__builtin_ctz(bits)];
#else
      for (; bits != 0; bits &= bits - 1) {
        const unsigned i = static_cast<unsigned>(__builtin_ctz(bits));
        if (n->keys[i] == chunk) return &n->children[i];
      }
      return nullptr;
#endif
    }
    case NodeType::kN48: {
      Node48* n = as<Node48>(node);
      const unsigned s = n->index[chunk];
      return s == 0 ? nullptr : &n->children[s - 1];
    }
    case NodeType::kN256: {
      Node256* n = as<Node256>(node);
      return n->children[chunk] == 0 ? nullptr : &n->children[chunk];
    }
  }
  return nullptr;
}

unsigned ArtNodes::child_count(std::uint64_t node) const noexcept {
  unsigned count = 0;
  for_each_child(node, 0, [&](unsigned, std::uint64_t*) {
    ++count;
    return true;
  });
  return count;
}

Entries ArtNodes::entries(std::uint64_t node) const {
  Entries out;
  for_each_child(node, 0, [&](unsigned chunk, std::uint64_t* slot) {
    out.push(chunk, *slot);
    return true;
  });
  return out;
}

std::string ArtNodes::node_problem(std::uint64_t node) const {
  if (type_info(base(node)->type) == nullptr) return "has no valid node type";
  switch (type(node)) {
    case NodeType::kN4: {
      const std::uint64_t word = as<Node4>(node)->keys_slots;
      unsigned used = 0;
      bool ended = false;
      for (unsigned j = 0; j < 4; ++j) {
        const unsigned s = n4_slot(word, j);
        if (s == 0) {
          ended = true;
          continue;
        }
        if (ended || s > 4 || (used & (1u << s)) != 0) return "has a malformed N4 slot array";
        if (j > 0 && n4_key(word, j - 1) >= n4_key(word, j)) return "has unordered N4 keys";
        used |= 1u << s;
      }
      return {};
    }
    case NodeType::kN16:
      return (as<Node16>(node)->bitmap >> 16) != 0 ? "has a malformed N16 bitmap" : "";
    case NodeType::kN48: {
      const Node48* n = as<Node48>(node);
      std::uint64_t used = 0;
      for (unsigned b = 0; b < 256; ++b) {
        const unsigned s = n->index[b];
        if (s == 0) continue;
        if (s > 48 || (used & (1ull << (s - 1))) != 0) return "has a malformed N48 index";
        used |= 1ull << (s - 1);
      }
      return {};
    }
    case NodeType::kN256: return {};
  }
  return {};
}

void ArtNodes::fill(std::uint64_t node, NodeType type, Header h, std::uint64_t end,
                    const Entries& children) const noexcept {
  std::memset(static_cast<void*>(base(node)), 0, type_info(type).bytes);
  if (!stores_depth_) h.depth = 0;
  NodeBase* b = base(node);
  b->header = h.pack();
  b->type = static_cast<std::uint64_t>(type);
  b->end_slot = end;
  switch (type) {
    case NodeType::kN4: {
      Node4* n = as<Node4>(node);
      for (unsigned j = 0; j < children.size; ++j) {
        n->keys_slots |= n4_entry(j, children.at[j].chunk, j + 1);
        n->children[j] = children.at[j].ref;
      }
      return;
    }
    case NodeType::kN16: {
      Node16* n = as<Node16>(node);
      for (unsigned j = 0; j < children.size; ++j) {
        n->keys[j] = static_cast<std::uint8_t>(children.at[j].chunk);
        n->children[j] = children.at[j].ref;
      }
      n->bitmap = (1ull << children.size) - 1;
      return;
    }
    case NodeType::kN48: {
      Node48* n = as<Node48>(node);
      for (unsigned j = 0; j < children.size; ++j) {
        n->index[children.at[j].chunk] = static_cast<std::uint8_t>(j + 1);
        n->children[j] = children.at[j].ref;
      }
      return;
    }
    case NodeType::kN256: {
      Node256* n = as<Node256>(node);
      for (unsigned j = 0; j < children.size; ++j) {
        n->children[children.at[j].chunk] = children.at[j].ref;
      }
      return;
    }
  }
}

void ArtNodes::add_in_place(std::uint64_t node, unsigned chunk, std::uint64_t ref) const noexcept {
  switch (type(node)) {
    case NodeType::kN4: {  // Algorithm 3: pointer into a free slot, then the key/slot word
      Node4* n = as<Node4>(node);
      const std::uint64_t word = n->keys_slots;
      unsigned used = 0;
      unsigned count = 0;
      for (; count < 4 && n4_slot(word, count) != 0; ++count) used |= 1u << n4_slot(word, count);
      unsigned slot = 1;
      while ((used & (1u << slot)) != 0) ++slot;
      n->children[slot - 1] = ref;
      region_->persist(&n->children[slot - 1], sizeof(std::uint64_t));
      std::uint64_t next = 0;
      unsigned out = 0;
      bool placed = false;
      for (unsigned j = 0; j < count; ++j, ++out) {
        if (!placed && chunk < n4_key(word, j)) {
          next |= n4_entry(out++, chunk, slot);
          placed = true;
        }
        next |= n4_entry(out, n4_key(word, j), n4_slot(word, j));
      }
      if (!placed) next |= n4_entry(out, chunk, slot);
      commit(&n->keys_slots, next);
      return;
    }
    case NodeType::kN16: {  // Algorithm 4: key and pointer into a free entry, then the bitmap
      Node16* n = as<Node16>(node);
      const std::uint64_t bits = n->bitmap;
      const unsigned i = static_cast<unsigned>(__builtin_ctzll(~bits));
      n->keys[i] = static_cast<std::uint8_t>(chunk);
      n->children[i] = ref;
      region_->flush(&n->keys[i], 1);
      region_->flush(&n->children[i], sizeof(std::uint64_t));
      region_->fence();
      commit(&n->bitmap, bits | (1ull << i));
      return;
    }
    case NodeType::kN48: {  // Algorithm 5: pointer into a slot no index names, then the index
      Node48* n = as<Node48>(node);
      std::uint64_t used = 0;
      for (unsigned b = 0; b < 256; ++b) {
        if (n->index[b] != 0) used |= 1ull << (n->index[b] - 1);
      }
      const unsigned s = static_cast<unsigned>(__builtin_ctzll(~used));
      n->children[s] = ref;
      region_->persist(&n->children[s], sizeof(std::uint64_t));
      __atomic_store_n(&n->index[chunk], static_cast<std::uint8_t>(s + 1), __ATOMIC_RELAXED);
      region_->persist(&n->index[chunk], 1);
      return;
    }
    case NodeType::kN256: commit(&as<Node256>(node)->children[chunk], ref); return;
  }
}

void ArtNodes::remove_in_place(std::uint64_t node, unsigned chunk) const noexcept {
  switch (type(node)) {
    case NodeType::kN4: {  // the word without the entry; the stale pointer slot is free
      Node4* n = as<Node4>(node);
      const std::uint64_t word = n->keys_slots;
      std::uint64_t next = 0;
      unsigned out = 0;
      for (unsigned j = 0; j < 4 && n4_slot(word, j) != 0; ++j) {
        if (n4_key(word, j) != chunk) next |= n4_entry(out++, n4_key(word, j), n4_slot(word, j));
      }
      commit(&n->keys_slots, next);
      return;
    }
    case NodeType::kN16: {
      Node16* n = as<Node16>(node);
      const std::uint64_t bits = n->bitmap;
      for (unsigned i = 0; i < 16; ++i) {
        if ((bits & (1ull << i)) != 0 && n->keys[i] == chunk) {
          commit(&n->bitmap, bits & ~(1ull << i));
          return;
        }
      }
      return;
    }
    case NodeType::kN48: {
      Node48* n = as<Node48>(node);
      __atomic_store_n(&n->index[chunk], std::uint8_t{0}, __ATOMIC_RELAXED);
      region_->persist(&n->index[chunk], 1);
      return;
    }
    case NodeType::kN256: commit(&as<Node256>(node)->children[chunk], 0); return;
  }
}

}  // namespace pmcached::engine::art

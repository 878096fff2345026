// Node decoders for the radix invariants checker: the wort layout (engine/wort/wort_node.h) and the
// ART layouts of woart and artcow (engine/art/art_node.h), read from the pool directly.
#include <set>
#include <string>

#include "engine/art/art_node.h"
#include "engine/wort/wort_node.h"
#include "tests/radix/radix_inspect.h"

namespace pmcached::engine::radix::testing {
namespace {

template <unsigned kBits>
void set_header(NodeView& v, std::uint64_t word) {
  const auto h = PathHeader<kBits>::unpack(word);
  v.bits = kBits;
  v.header_depth = h.depth;
  v.prefix_len = h.prefix_len;
  for (unsigned j = 0; j < h.stored(); ++j) v.stored_prefix.push_back(h.chunk(j));
}

bool fits(const pm::PmRegion& region, std::uint64_t offset, std::size_t bytes, NodeView& v) {
  if (offset + bytes <= region.size()) return true;
  v.problems.push_back("node runs past the region");
  return false;
}

void decode_n4(const art::Node4& n, NodeView& v) {
  const std::uint64_t word = n.keys_slots;
  unsigned count = 0;
  while (count < 4 && art::n4_slot(word, count) != 0) ++count;
  std::set<unsigned> slots;
  for (unsigned j = 0; j < 4; ++j) {
    const unsigned key = art::n4_key(word, j);
    const unsigned slot = art::n4_slot(word, j);
    if (j >= count) {
      if (key != 0 || slot != 0)
        v.problems.push_back("N4 unused entry " + std::to_string(j) +
                             " not zero (entries must be 0..count-1)");
      continue;
    }
    if (slot > 4) {
      v.problems.push_back("N4 slot " + std::to_string(slot) + " out of range");
      continue;
    }
    if (!slots.insert(slot).second) v.problems.push_back("N4 slot used twice");
    if (j > 0 && key <= art::n4_key(word, j - 1)) {
      v.problems.push_back("N4 partial keys not unique and ascending");
    }
    v.children.emplace_back(key, n.children[slot - 1]);
  }
}

void decode_n16(const art::Node16& n, NodeView& v, bool cow) {
  if ((n.bitmap >> 16) != 0) v.problems.push_back("N16 bitmap bits above 15 set");
  std::set<unsigned> keys;
  unsigned count = 0;
  for (unsigned i = 0; i < 16; ++i) {
    if ((n.bitmap >> i & 1u) == 0) continue;
    ++count;
    if (!keys.insert(n.keys[i]).second) v.problems.push_back("N16 partial key used twice");
    v.children.emplace_back(n.keys[i], n.children[i]);
  }
  if (cow) {
    const std::uint64_t prefix_bits = count == 0 ? 0 : (std::uint64_t{1} << count) - 1;
    if ((n.bitmap & 0xFFFF) != prefix_bits) {
      v.problems.push_back("artcow N16 entries are not exactly 0..count-1");
    }
    for (unsigned i = 1; i < count; ++i) {
      if (n.keys[i] <= n.keys[i - 1]) v.problems.push_back("artcow N16 keys not ascending");
    }
  }
}

void decode_n48(const art::Node48& n, NodeView& v) {
  unsigned named[48] = {};
  for (unsigned b = 0; b < 256; ++b) {
    const unsigned s = n.index[b];
    if (s == 0) continue;
    if (s > 48) {
      v.problems.push_back("N48 index entry " + std::to_string(b) + " = " + std::to_string(s) +
                           " names no slot");
      continue;
    }
    if (named[s - 1]++ != 0) v.problems.push_back("N48 slot named by two index entries");
    v.children.emplace_back(b, n.children[s - 1]);
  }
}

}  // namespace

NodeView decode_wort_node(const pm::PmRegion& region, std::uint64_t offset, bool /*is_root*/) {
  NodeView v;
  v.type = "wort";
  v.bytes = sizeof(wort::Node);
  if (!fits(region, offset, sizeof(wort::Node), v)) return v;
  const auto* n = region.at<wort::Node>(offset);
  set_header<4>(v, n->header);
  v.end_slot = n->end_slot;
  for (unsigned i = 0; i < wort::kFanout; ++i) {
    if (n->children[i] != 0) v.children.emplace_back(i, n->children[i]);
  }
  v.readable = true;
  return v;
}

NodeView decode_art_node(const pm::PmRegion& region, std::uint64_t offset, bool is_root, bool cow) {
  NodeView v;
  v.type = "art?";
  v.depth_in_header = !cow;
  if (!fits(region, offset, sizeof(art::NodeBase), v)) return v;
  const auto* base = region.at<art::NodeBase>(offset);
  const art::TypeInfo* info = art::type_info(base->type);
  if (info == nullptr) {
    v.problems.push_back("type word " + std::to_string(base->type) + " is no node type");
    return v;
  }
  v.type = info->name;
  v.bytes = info->bytes;
  if (!fits(region, offset, info->bytes, v)) return v;
  set_header<8>(v, base->header);
  v.end_slot = base->end_slot;
  switch (static_cast<art::NodeType>(base->type)) {
    case art::NodeType::kN4: decode_n4(*region.at<art::Node4>(offset), v); break;
    case art::NodeType::kN16: decode_n16(*region.at<art::Node16>(offset), v, cow); break;
    case art::NodeType::kN48: decode_n48(*region.at<art::Node48>(offset), v); break;
    case art::NodeType::kN256: {
      const auto* n = region.at<art::Node256>(offset);
      for (unsigned i = 0; i < 256; ++i) {
        if (n->children[i] != 0) v.children.emplace_back(i, n->children[i]);
      }
      break;
    }
  }
  const unsigned count = static_cast<unsigned>(v.children.size());
  const unsigned min = (is_root && base->type == 1) ? 0 : info->min_children;
  if (count < min || count > info->capacity) {
    v.problems.push_back(std::to_string(count) + " children outside the " + info->name +
                         " bounds " + std::to_string(min) + ".." + std::to_string(info->capacity));
  }
  v.readable = true;
  return v;
}

}  // namespace pmcached::engine::radix::testing

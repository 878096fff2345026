// WortEngine: the class behind make_wort_engine() (private to engine/wort). The design and the
// persist orders are described in wort_factory.h; the node layout in wort_node.h.
//
// Files: wort_engine.cc (construction, node helpers), wort_insert.cc (upsert, Alg. 1),
// wort_erase.cc (erase, collapse). Lookup, scan, stats and recovery come from
// radix::RadixEngine; reads, walks and Algorithm 2 are the shared radix algorithms.
//
// Thread safety: see wort_factory.h. Private helpers assume the caller holds mutex_ (shared for
// the const ones that only read, exclusive for those that write).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/engine_context.h"
#include "engine/index_engine.h"
#include "engine/radix/radix_engine.h"
#include "engine/wort/wort_node.h"

namespace pmcached::engine::wort {

class WortEngine final : public radix::RadixEngine<WortNodes> {
 public:
  explicit WortEngine(const EngineContext& context);
  ~WortEngine() override;

  [[nodiscard]] std::string_view name() const noexcept override;
  [[nodiscard]] ItemRef erase(std::string_view key) noexcept override;
  [[nodiscard]] ItemRef erase_routed(std::string_view route, ItemRef expected) noexcept override;

 private:
  [[nodiscard]] UpsertResult upsert_locked(std::string_view key, ItemRef ref) noexcept override;
  [[nodiscard]] ItemRef erase_matching(std::string_view key, ItemRef expected) noexcept;
  // --- access (wort_engine.cc) ---
  [[nodiscard]] Node* node(std::uint64_t offset) const noexcept { return nodes_.node(offset); }
  [[nodiscard]] Header header_of(std::uint64_t offset) const noexcept {
    return nodes_.header(offset, 0);
  }
  [[nodiscard]] std::string_view leaf_key(std::uint64_t ref) const { return nodes_.leaf_key(ref); }
  // Allocates a zeroed node with header `h`; 0 when the heap is full.
  [[nodiscard]] std::uint64_t new_node(Header h) noexcept;
  void persist_new_node(std::uint64_t offset) noexcept;
  // The slot of `n` where a key of `key_chunks` nibbles with branch nibble `next` belongs.
  [[nodiscard]] static std::uint64_t* slot_for(Node* n, std::uint32_t branch,
                                               std::size_t key_chunks, unsigned next) noexcept {
    return key_chunks == branch ? &n->end_slot : &n->children[next];
  }

  // --- insert (wort_insert.cc) ---
  UpsertResult insert_first(std::string_view key, std::uint64_t leaf) noexcept;
  UpsertResult push_down(std::uint64_t* slot, std::uint64_t old_leaf, std::string_view key,
                         std::uint64_t leaf, std::uint32_t depth) noexcept;
  UpsertResult split(std::uint64_t* slot, std::uint64_t offset, Header h, std::string_view key,
                     std::uint64_t leaf, std::uint32_t mismatch) noexcept;

  // --- erase (wort_erase.cc) ---
  void remove_leaf(std::uint64_t* parent_slot, std::uint64_t offset, std::uint64_t* slot) noexcept;
};

}  // namespace pmcached::engine::wort

// ArtEngine: the class behind make_woart_engine() and make_artcow_engine() (private to
// engine/art). The two variants share everything but the commit of a change to an N4 or N16 and
// of a prefix split or merge (art_factory.h); `cow_` selects artcow's copy-on-write.
//
// Files: art_engine.cc (construction, node building), art_insert.cc (upsert), art_erase.cc
// (erase), art_nodes.cc (node layouts, in-place commits). Lookup, scan, stats and recovery come
// from radix::RadixEngine; reads, walks and Algorithm 2 are the shared radix algorithms.
//
// Thread safety: see art_factory.h. Private helpers assume the caller holds mutex_.
#pragma once

#include <cstdint>
#include <string_view>

#include "engine/art/art_factory.h"
#include "engine/art/art_nodes.h"
#include "engine/radix/radix_engine.h"

namespace pmcached::engine::art {

class ArtEngine final : public radix::RadixEngine<ArtNodes> {
 public:
  ArtEngine(const EngineContext& context, bool cow);
  ~ArtEngine() override;

  [[nodiscard]] std::string_view name() const noexcept override {
    return cow_ ? kArtCowEngineName : kWoartEngineName;
  }
  [[nodiscard]] ItemRef erase(std::string_view key) noexcept override;
  [[nodiscard]] ItemRef erase_routed(std::string_view route, ItemRef expected) noexcept override;

 private:
  [[nodiscard]] UpsertResult upsert_locked(std::string_view key, ItemRef ref) noexcept override;
  [[nodiscard]] ItemRef erase_matching(std::string_view key, ItemRef expected) noexcept;
  // Allocates and fills a node (ArtNodes::fill) and flushes it, unfenced; 0 when the heap is full.
  [[nodiscard]] std::uint64_t build(NodeType type, Header h, std::uint64_t end,
                                    const Entries& children) noexcept;
  // Replaces the node `old` in `slot` by a new node built from the arguments: build, fence, one
  // store of `slot`, free `old`. False (nothing changed) when the heap is full.
  [[nodiscard]] bool rebuild(std::uint64_t* slot, std::uint64_t old, NodeType type, Header h,
                             std::uint64_t end, const Entries& children) noexcept;

  // --- insert (art_insert.cc) ---
  UpsertResult insert_first(std::string_view key, std::uint64_t leaf) noexcept;
  UpsertResult add_child(std::uint64_t* slot, std::uint64_t node, const Header& h, unsigned chunk,
                         std::uint64_t leaf) noexcept;
  UpsertResult push_down(std::uint64_t* slot, std::uint64_t old_leaf, std::string_view key,
                         std::uint64_t leaf, std::uint32_t depth) noexcept;
  UpsertResult split(std::uint64_t* slot, std::uint64_t node, const Header& h, std::string_view key,
                     std::uint64_t leaf, std::uint32_t mismatch) noexcept;

  // --- erase (art_erase.cc) ---
  // Removes the END leaf (at_end) or the child `chunk` of `node` (header `h`, in `parent_slot`).
  void remove(std::uint64_t* parent_slot, std::uint64_t node, const Header& h, bool at_end,
              unsigned chunk) noexcept;
  [[nodiscard]] bool collapse(std::uint64_t* parent_slot, std::uint64_t node, const Header& h,
                              std::uint64_t other) noexcept;

  const bool cow_;
};

}  // namespace pmcached::engine::art

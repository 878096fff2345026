// ArtEngine: the class behind make_woart_engine() and make_artcow_engine() (private to
// engine/art). The two variants share everything but the commit of a change to an N4 or N16 and
// of a prefix split or merge (art_engine.h); `cow_` selects artcow's copy-on-write.
//
// Files: art_engine.cc (construction, lookup, scan, stats, recovery), art_insert.cc (upsert),
// art_erase.cc (erase), art_nodes.cc (node layouts, in-place commits). Reads, walks and
// Algorithm 2 are the shared radix algorithms (engine/radix/radix_tree.h) over ArtNodes.
//
// Thread safety: see art_engine.h. Private helpers assume the caller holds mutex_.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "engine/art/art_engine.h"
#include "engine/art/art_nodes.h"
#include "engine/pm/allocator.h"
#include "engine/pm/pool.h"

namespace pmcached::engine::art {

class ArtEngine final : public IndexEngine {
 public:
  ArtEngine(const EngineContext& context, bool cow);
  ~ArtEngine() override;

  [[nodiscard]] std::string_view name() const noexcept override {
    return cow_ ? kArtCowEngineName : kWoartEngineName;
  }
  [[nodiscard]] EngineCapabilities capabilities() const noexcept override {
    return {.ordered = true, .concurrent = true, .persistent = true};
  }
  [[nodiscard]] ItemRef lookup(std::string_view key) const noexcept override;
  [[nodiscard]] UpsertResult upsert(std::string_view key, ItemRef ref) noexcept override;
  [[nodiscard]] ItemRef erase(std::string_view key) noexcept override;
  void scan(std::string_view from,
            const std::function<bool(std::string_view key, ItemRef ref)>& visit) const override;
  [[nodiscard]] std::size_t size() const noexcept override {
    return keys_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::vector<EngineStat> stats() const override;
  void recover() override;
  void for_each_block(const std::function<void(std::uint64_t offset)>& visit) const override;

 private:
  [[nodiscard]] std::uint64_t root() const noexcept {
    return __atomic_load_n(root_field_, __ATOMIC_RELAXED);
  }
  // Allocates and fills a node (ArtNodes::fill) and flushes it, unfenced; 0 when the heap is full.
  [[nodiscard]] std::uint64_t build(NodeType type, Header h, std::uint64_t end,
                                    const Entries& children) noexcept;
  // Replaces the node `old` in `slot` by a new node built from the arguments: build, fence, one
  // store of `slot`, free `old`. False (nothing changed) when the heap is full.
  [[nodiscard]] bool rebuild(std::uint64_t* slot, std::uint64_t old, NodeType type, Header h,
                             std::uint64_t end, const Entries& children) noexcept;
  void recount();

  // --- insert (art_insert.cc) ---
  UpsertResult insert_first(std::string_view key, std::uint64_t leaf) noexcept;
  UpsertResult add_child(std::uint64_t* slot, std::uint64_t node, const Header& h, unsigned chunk,
                         std::uint64_t leaf) noexcept;
  UpsertResult push_down(std::uint64_t* slot, std::uint64_t old_leaf, std::string_view key,
                         std::uint64_t leaf, std::uint32_t depth) noexcept;
  UpsertResult split(std::uint64_t* slot, std::uint64_t node, const Header& h,
                     std::string_view key, std::uint64_t leaf, std::uint32_t mismatch) noexcept;

  // --- erase (art_erase.cc) ---
  // Removes the END leaf (at_end) or the child `chunk` of `node` (header `h`, in `parent_slot`).
  void remove(std::uint64_t* parent_slot, std::uint64_t node, const Header& h, bool at_end,
              unsigned chunk) noexcept;
  [[nodiscard]] bool collapse(std::uint64_t* parent_slot, std::uint64_t node, const Header& h,
                std::uint64_t other) noexcept;

  const bool cow_;
  std::unique_ptr<pm::Pool> own_pool_;            // only without EngineContext::pool
  std::unique_ptr<pm::Allocator> own_allocator_;  // likewise
  pm::Pool* pool_;
  pm::Allocator* allocator_;
  pm::PmRegion* region_;
  std::uint64_t* root_field_;
  ArtNodes nodes_;

  mutable std::shared_mutex mutex_;
  std::atomic<std::size_t> keys_{0};
};

}  // namespace pmcached::engine::art

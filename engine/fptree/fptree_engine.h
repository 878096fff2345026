// FpTreeEngine: the class behind make_fptree_engine() (private to engine/fptree). The design and
// the persist orders are in fptree_factory.h, the leaf layout in fptree_leaf.h.
//
// Files: fptree_engine.cc (start-up, lookup, scan, stats), fptree_update.cc (upsert, erase,
// split, unlink).
//
// Thread safety: see fptree_factory.h. Private helpers assume the caller holds mutex_.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "engine/btree/btree_engine.h"
#include "engine/fptree/fptree_leaf.h"
#include "engine/fptree/inner_tree.h"

namespace pmcached::engine::fptree {

// "FPTREE01", little-endian: the meta block's magic.
inline constexpr std::uint64_t kMetaMagic = 0x3130454552545046ull;

class FpTreeEngine final : public btree::BTreeEngine {
 public:
  explicit FpTreeEngine(const EngineContext& context);

  [[nodiscard]] std::string_view name() const noexcept override;
  [[nodiscard]] ItemRef lookup(std::string_view key) const noexcept override;
  [[nodiscard]] UpsertResult upsert(std::string_view key, ItemRef ref) noexcept override;
  [[nodiscard]] ItemRef erase(std::string_view key) noexcept override;
  void scan(std::string_view from,
            const std::function<bool(std::string_view key, ItemRef ref)>& visit) const override;
  void recover() override;
  [[nodiscard]] std::vector<ItemRef> drop_corrupt(const std::vector<ItemRef>& corrupt) override;

 private:
  [[nodiscard]] Leaf* leaf(std::uint64_t offset) const noexcept { return at<Leaf>(offset); }
  [[nodiscard]] std::uint64_t first_leaf() const noexcept;
  // Walks the chain checking every leaf before anything reads it; throws on a corrupt pool.
  [[nodiscard]] std::vector<std::uint64_t> checked_chain() const;

  // --- recovery (fptree_engine.cc) ---
  void replay_split_log() noexcept;
  void unlink_empty_leaves(std::vector<std::uint64_t>& chain) noexcept;
  void rebuild_inner(const std::vector<std::uint64_t>& chain);

  // --- updates (fptree_update.cc) ---
  UpsertResult insert_first(std::string_view key, ItemRef ref) noexcept;
  void insert_into(std::uint64_t offset, int slot, std::uint8_t fp, ItemRef ref) noexcept;
  // Splits the full leaf at `offset`; returns the leaf that now holds `key`'s range, or 0 when
  // the heap is full (nothing changed).
  std::uint64_t split(std::uint64_t offset, std::string_view key) noexcept;
  void unlink(std::uint64_t offset, std::string_view key) noexcept;

  // --- BTreeEngine ---
  void visit_blocks(const std::function<void(std::uint64_t offset)>& visit) const override;
  btree::TreeFigures figures() const override;
  void extra_stats(std::vector<EngineStat>& out) const override;

  InnerTree inner_;
  std::uint64_t leaf_splits_ = 0;
  std::uint64_t log_replays_ = 0;
  std::uint64_t startup_rebuild_us_ = 0;
};

}  // namespace pmcached::engine::fptree

// NvTreeEngine: the class behind make_nvtree_engine() (private to engine/nvtree). The design and
// the persist orders are described in nvtree_factory.h, the leaf layout in nvtree_leaf.h, the
// DRAM inner nodes in inner_array.h.
//
// Files: nvtree_engine.cc (construction, lookup, scan, recovery, figures), nvtree_update.cc
// (upsert, erase, appends, splits and compactions, unlinks).
//
// Thread safety: see nvtree_factory.h. Private helpers assume the caller holds mutex_ (shared for
// the const ones, exclusive for those that write).
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "engine/btree/btree_engine.h"
#include "engine/nvtree/inner_array.h"
#include "engine/nvtree/nvtree_factory.h"
#include "engine/nvtree/nvtree_leaf.h"

namespace pmcached::engine::nvtree {

// "NVTREE02" as a little-endian u64: leaf layout version 2 (nvtree_leaf.h). A pool of another
// layout version has another magic and is refused at open (docs/LAYOUTS.md).
inline constexpr std::uint64_t kMetaMagic = 0x323045455254564eull;

class NvTreeEngine final : public btree::BTreeEngine {
 public:
  explicit NvTreeEngine(const EngineContext& context);

  [[nodiscard]] std::string_view name() const noexcept override { return kNvTreeEngineName; }
  [[nodiscard]] ItemRef lookup(std::string_view key) const noexcept override;
  [[nodiscard]] UpsertResult upsert(std::string_view key, ItemRef ref) noexcept override;
  [[nodiscard]] ItemRef erase(std::string_view key) noexcept override;
  void scan(std::string_view from,
            const std::function<bool(std::string_view key, ItemRef ref)>& visit) const override;
  void recover() override;
  [[nodiscard]] std::vector<ItemRef> drop_corrupt(const std::vector<ItemRef>& corrupt) override;

 protected:
  void visit_blocks(const std::function<void(std::uint64_t offset)>& visit) const override;
  btree::TreeFigures figures() const override;
  void extra_stats(std::vector<EngineStat>& out) const override;

 private:
  // --- reads (nvtree_engine.cc) ---
  [[nodiscard]] Leaf* leaf(std::uint64_t offset) const noexcept { return at<Leaf>(offset); }
  [[nodiscard]] unsigned find(const Leaf& l, std::string_view key, std::uint64_t tag) const {
    return find_entry(l, key, tag, key_of_);
  }
  // Throws std::runtime_error when the chain from meta.root is not a valid chain of leaves;
  // else returns the array's list (a leaf's bound: its smallest live key) and counts the keys.
  [[nodiscard]] std::vector<InnerArray::Entry> validate_chain(std::size_t& keys) const;

  // --- writes (nvtree_update.cc) ---
  // Appends `first` (and `second` unless 0) to a leaf with room, then commits count.
  void append(Leaf& l, std::uint64_t first, std::uint64_t second = 0) noexcept;
  // Replaces the full leaf at `p` by one compacted or two split leaves; false when the heap is
  // full (nothing changed).
  [[nodiscard]] bool restructure(InnerArray::Position p) noexcept;
  // Unlinks and frees the leaf at `p`.
  void unlink(InnerArray::Position p) noexcept;
  // The word that points to the leaf at `p`: its predecessor's next, or meta.root.
  [[nodiscard]] std::uint64_t* link_to(InnerArray::Position p) const noexcept;
  UpsertResult insert_first(std::uint64_t entry) noexcept;
  void note_rebuild(bool rebuilt, std::int64_t started_ns) noexcept;

  InnerArray inner_;
  std::atomic<std::uint64_t> leaf_splits_{0};
  std::atomic<std::uint64_t> leaf_compactions_{0};
  std::atomic<std::uint64_t> inner_rebuilds_{0};
  std::atomic<std::uint64_t> inner_rebuild_ns_{0};
  std::atomic<std::uint64_t> startup_rebuild_us_{0};
};

}  // namespace pmcached::engine::nvtree

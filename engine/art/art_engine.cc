// ArtEngine: construction and node building. See art_factory.h.
#include "engine/art/art_engine.h"

#include "engine/pm/fault_injection.h"

namespace pmcached::engine {
namespace art {

ArtEngine::ArtEngine(const EngineContext& context, bool cow)
    : RadixEngine(context, cow ? kArtCowEngineName : kWoartEngineName, /*stores_depth=*/!cow),
      cow_(cow) {}

ArtEngine::~ArtEngine() = default;

std::uint64_t ArtEngine::build(NodeType type, Header h, std::uint64_t end,
                               const Entries& children) noexcept {
  const std::size_t bytes = type_info(type).bytes;
  const std::uint64_t offset = allocator_->allocate(bytes, pm::BlockUse::kIndex);
  if (offset == 0) return 0;
  nodes_.fill(offset, type, h, end, children);
  if (!pm::FaultInjection::active(pm::Fault::kSkipNewNodeFlush))
    region_->flush(nodes_.base(offset), bytes);
  return offset;
}

bool ArtEngine::rebuild(std::uint64_t* slot, std::uint64_t old, NodeType type, Header h,
                        std::uint64_t end, const Entries& children) noexcept {
  const std::uint64_t fresh = build(type, h, end, children);
  if (fresh == 0) return false;
  region_->fence();
  nodes_.commit(slot, fresh);
  release_node(old);
  return true;
}

}  // namespace art

std::unique_ptr<IndexEngine> make_woart_engine(const EngineContext& context) {
  return std::make_unique<art::ArtEngine>(context, /*cow=*/false);
}

std::unique_ptr<IndexEngine> make_artcow_engine(const EngineContext& context) {
  return std::make_unique<art::ArtEngine>(context, /*cow=*/true);
}

}  // namespace pmcached::engine

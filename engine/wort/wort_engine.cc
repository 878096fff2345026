// WortEngine: construction and node helpers. See wort_factory.h.
#include "engine/wort/wort_engine.h"

#include <cstring>

#include "engine/pm/fault_injection.h"
#include "engine/wort/wort_factory.h"

namespace pmcached::engine {
namespace wort {

WortEngine::WortEngine(const EngineContext& context) : RadixEngine(context, kWortEngineName) {}

WortEngine::~WortEngine() = default;

std::string_view WortEngine::name() const noexcept { return kWortEngineName; }

std::uint64_t WortEngine::new_node(Header h) noexcept {
  const std::uint64_t offset = allocator_->allocate(sizeof(Node), pm::BlockUse::kIndex);
  if (offset == 0) return 0;
  Node* n = node(offset);
  std::memset(static_cast<void*>(n), 0, sizeof(Node));
  n->header = h.pack();
  return offset;
}

void WortEngine::persist_new_node(std::uint64_t offset) noexcept {
  if (!pm::FaultInjection::active(pm::Fault::kSkipNewNodeFlush))
    region_->flush(node(offset), sizeof(Node));
}

}  // namespace wort

std::unique_ptr<IndexEngine> make_wort_engine(const EngineContext& context) {
  return std::make_unique<wort::WortEngine>(context);
}

}  // namespace pmcached::engine

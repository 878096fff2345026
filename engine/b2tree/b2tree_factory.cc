#include "engine/b2tree/b2tree_factory.h"

#include <algorithm>

#include "engine/bptree/bptree_engine.h"

namespace pmcached::engine {

std::unique_ptr<RecordEngine> make_b2tree_engine(const RecordEngineContext& context) {
  return std::make_unique<bptree::BpTreeEngine>(context, std::max(context.paged.b2_threshold, 1u));
}

}  // namespace pmcached::engine

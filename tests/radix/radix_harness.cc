// Radix-specific helpers over the generic harness. See radix_harness.h.
#include "tests/radix/radix_harness.h"

namespace pmcached::engine::radix::testing {

std::uint64_t radix_node_at(Harness& h, std::string_view key, std::uint32_t branch) {
  return node_on_path(h.region(), h.pool().root(), decoder_for(h.engine_name()), key, branch);
}

std::string radix_type_at(Harness& h, std::string_view key, std::uint32_t branch) {
  const std::uint64_t node = radix_node_at(h, key, branch);
  if (node == 0) return "none";
  return decoder_for(h.engine_name())(h.region(), node, node == h.pool().root()).type;
}

}  // namespace pmcached::engine::radix::testing

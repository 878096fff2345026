// TEST ONLY: breaks the persist order of the radix engines (wort, woart, artcow) on purpose, so the
// crash tests can show that the crash simulator catches a broken engine. Never set outside tests;
// not thread-safe.
#pragma once

namespace pmcached::engine::radix {

struct FaultInjection {
  // Nodes built by an engine are not flushed before the store that publishes them.
  static inline bool skip_new_node_flush = false;
};

}  // namespace pmcached::engine::radix

// TEST ONLY: breaks the persist order of the persistent index engines (the radix trees wort, woart,
// artcow; the B-trees) on purpose, so the crash tests (tests/index/index_crash_test.cc) can show
// that the crash simulator catches a broken engine. Never set outside tests; not thread-safe.
#pragma once

namespace pmcached::engine {

struct FaultInjection {
  // Nodes built by an engine are not flushed before the store that publishes them.
  static inline bool skip_new_node_flush = false;
};

}  // namespace pmcached::engine

// Radix-specific helpers over the generic harness of the persistent index engines
// (tests/index/index_harness.h, whose crash machinery is tests/index/index_crash.h): the node on
// a key's path at a branch position, and its type, read with the radix decoders
// (radix_inspect.h). The radix tests (tests/art, tests/wort) work in this namespace, which sees
// the generic test support (pmcached::engine::testing) too.
//
// Thread safety: as Harness (single-threaded).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tests/index/index_crash.h"
#include "tests/index/index_harness.h"
#include "tests/radix/radix_inspect.h"

namespace pmcached::engine::radix::testing {

using namespace ::pmcached::engine::testing;  // Harness, Model, Op, crash_everywhere, be64, ...

// The node on `key`'s path in `h`'s tree branching at chunk `branch` (node_on_path), 0 if none.
[[nodiscard]] std::uint64_t radix_node_at(Harness& h, std::string_view key, std::uint32_t branch);
// Its type ("n4", ..., "wort"), or "none".
[[nodiscard]] std::string radix_type_at(Harness& h, std::string_view key, std::uint32_t branch);

}  // namespace pmcached::engine::radix::testing

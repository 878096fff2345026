// EngineSpec: one item of a benchmark's --engines list, "engine[:hash|:swizzle][:tN]": a
// registered engine and, for a paged engine, its page table (default hash) and the b2tree
// threshold N (slots per range of a page's embedded tree; default PagedOptions'). The label is
// the item as written, so "b2tree:hash:t16" and "b2tree:t64" are told apart in the output.
//
// Thread safety: a pure function (the engine registry is read-only).
#pragma once

#include <optional>
#include <string>

#include "engine/buffer/buffer_types.h"

namespace pmcached::bench {

struct EngineSpec {
  std::string label, engine;
  buffer::PageTableKind page_table = buffer::PageTableKind::kHash;
  std::optional<unsigned> b2_threshold;  // nullopt: the engine's default
  bool paged = false;
};

inline constexpr unsigned kMinB2Threshold = 2, kMaxB2Threshold = 4096;

// Throws std::invalid_argument with a one-line message for an unknown engine (listing the valid
// ones), an option of a volatile engine, an unknown option or a threshold out of range.
[[nodiscard]] EngineSpec parse_engine_spec(const std::string& label);

}  // namespace pmcached::bench

// b2tree: the bptree engine (engine/bptree/bptree_factory.h: page file, buffer pool, redo log,
// recovery, all the same) whose leaf and inner pages each embed a small trie (seed 004, the
// B2-tree; engine/b2tree/embedded_tree.h) that narrows the search in a page to a range of about
// --b2-threshold slots (finer, down to 8, on a page whose tree would stay within 0.4% of the
// page: engine/bptree/node.cc) and lets those slots hold the key bytes after the prefix the range
// shares.
// The trie is rebuilt when a page is split or merged and after --b2-threshold changes to a page;
// inserts and erases in between adjust its range array only. Its bytes are logged with the
// page's other changes, so durability and recovery are bptree's.
//
// Thread safety: as bptree (latch coupling; readers hold a page's latch shared while they use its
// trie, writers exclusively while they change or rebuild it).
#pragma once

#include <memory>
#include <string_view>

#include "engine/record_engine.h"

namespace pmcached::engine {

inline constexpr std::string_view kB2TreeEngineName = "b2tree";

// Throws std::runtime_error (one line naming the file) for a page file or log that cannot be used.
[[nodiscard]] std::unique_ptr<RecordEngine> make_b2tree_engine(const RecordEngineContext& context);

}  // namespace pmcached::engine

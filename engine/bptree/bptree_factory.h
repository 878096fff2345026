// bptree: a B+-tree whose records live in slotted pages on a page file behind a DRAM buffer pool,
// durable through a redo log in the PM pool (DESIGN.md "Paged storage"; seed 004 §4.1's baseline,
// seed 001's buffer manager, seed 003's hash table). The store's item records are kept whole in
// its leaves (large ones in overflow chains), so the data may be many times the buffer pool.
//
// Durability: every command's page changes are one redo unit (buffer/mini_transaction.h), made
// durable (flush + fence, shared by concurrent commands: group commit) before the command returns.
// Pages reach the page file by eviction (after the log is durable up to their LSN: the WAL rule)
// and by checkpoints (every dirty page written, the file fsynced, then the log's start moved past
// them), which run when the log is half full and at a clean shutdown. The log holds only the
// bytes a command changed (whole images only of new and rebuilt pages), so every page write goes
// through a double-write buffer in the pool (buffer/double_write.h): recovery first puts back
// any page a crash tore in the middle of its write, then replays the log from the last
// checkpoint. A torn page is repaired, never read.
//
// Files: the pool (its root field names the redo log's root block, which records the page file's
// id and the double-write buffer's root) and the page file (--page-file, default the pool's path +
// ".pages"). A page file that is not the one the pool's log was written for, or one with pages
// beside a new pool, is refused with one line, and nothing is changed.
//
// Thread safety: concurrent commands on different keys run in parallel (latch coupling in the
// tree, btree.h); a checkpoint waits for running writes and holds new ones back while it writes.
#pragma once

#include <memory>
#include <string_view>

#include "engine/record_engine.h"

namespace pmcached::engine {

inline constexpr std::string_view kBpTreeEngineName = "bptree";

// Throws std::runtime_error (one line naming the file) for a page file or log that cannot be used.
[[nodiscard]] std::unique_ptr<RecordEngine> make_bptree_engine(const RecordEngineContext& context);

}  // namespace pmcached::engine

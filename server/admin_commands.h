// The admin and monitoring commands: lru_crawler, slabs, cache_memlimit, watch (its checks; the
// connection becomes the watcher), and the stats groups sizes, detail, cachedump and conns.
// memcached 1.6.18's replies; README "Admin and monitoring commands" says what each does here.
//
// Thread safety: called from any worker thread; uses only the shared, thread-safe parts of the
// ServerContext.
#pragma once

#include <string>

#include "protocol/command.h"
#include "server/command_executor.h"

namespace pmcached::server {

// memcached's class ids are 1..63 (MAX_NUMBER_OF_SLAB_CLASSES - 1).
inline constexpr unsigned kLargestClassId = 63;

// Runs kLruCrawler, kSlabs, kCacheMemlimit or kWatch, appending the reply to `out`. `out`
// holding replies not yet sent means the command was pipelined behind others, which memcached
// refuses for watch and metadump.
AfterCommand run_admin_command(ServerContext& context, const protocol::Command& command,
                               std::string& out);

// `stats sizes|detail ...|cachedump ...|conns`: true if `command` is one of them (the reply is
// in `out`), false otherwise (nothing written).
bool write_admin_stats(ServerContext& context, const protocol::Command& command, std::string& out);

// memcached's ITEM_ntotal for an item: header, cas, key + NUL, client flags if not 0, data +
// "\r\n".
[[nodiscard]] constexpr std::size_t memcached_item_total(std::size_t key, std::size_t value,
                                                         std::uint32_t client_flags) noexcept {
  return 48 + 8 + key + 1 + (client_flags != 0 ? 4 : 0) + value + 2;
}

}  // namespace pmcached::server

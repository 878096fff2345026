// The `stats` command's groups: general, settings, items, slabs, engine, reset.
// Thread safety: reads shared counters only; callable from any worker thread.
#pragma once

#include <string_view>

#include "protocol/reply_writer.h"

namespace pmcached::server {

struct ServerContext;

// "VERSION <this>": memcached's protocol level, then pmcached's own version.
inline constexpr std::string_view kVersionText = "1.6.18-pmcached-" PMCACHED_VERSION;

// Writes the reply of `stats <group>` (group "" = general stats), memcached's format.
void write_stats(ServerContext& context, std::string_view group, protocol::ReplyWriter& writer);

}  // namespace pmcached::server

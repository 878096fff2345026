// `stats slabs` and `stats items`: the store's size classes in memcached's format and order.
//
// What memcached prints and pmcached leaves out (no equivalent here; README, "Size classes"):
// the segmented LRU's number_hot/warm/cold, age_hot/warm, moves_*, hits_to_*,
// lrutail_reflocked, tailrepairs, evicted_active, crawler_*, direct_reclaims.
//
// Thread safety: reads a snapshot of the store's statistics; call from any thread.
#pragma once

#include "engine/store/store.h"
#include "protocol/reply_writer.h"

namespace pmcached::server {

// Classes with pages or with slab counters, then active_slabs and total_malloced.
void write_slab_classes(const engine::Store& store, protocol::ReplyWriter& w);
// Classes with items.
void write_item_classes(const engine::Store& store, protocol::ReplyWriter& w);

}  // namespace pmcached::server

// CommandMonitor: feeds `stats detail` and the log watchers (`watch`) from the commands one
// executor runs. Each hook costs a relaxed load or two while nobody asked for detail or watches.
//
// What is logged (memcached's line formats, log_watchers.h): fetchers, one item_get per key of
// get/gets/gat/gats/mg; mutations, one item_store per set/add/replace/append/prepend/cas/ms.
// memcached also logs the lookups that its other commands make internally (touch, incr, delete,
// a storage command's look for the old item); pmcached does not.
//
// Thread safety: one per executor (worker thread); the AdminState it feeds is shared.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/store/store.h"
#include "server/admin_state.h"

namespace pmcached::server {

class CommandMonitor {
 public:
  explicit CommandMonitor(AdminState& admin) : admin_(admin) {}

  // The descriptor of the connection whose commands run next (cfd= in log lines).
  void set_client_fd(int fd) noexcept { client_fd_ = fd; }

  // A classic retrieval (`classic`: get/gets/gat/gats, counted by `stats detail`) or mg looked
  // up `key`; `item` is what it found (nullptr: a miss).
  void fetched(std::string_view key, const engine::ItemView* item, bool classic);
  // A classic storage command named `key` (counted by `stats detail` even when refused).
  void store_requested(std::string_view key);
  // A storage command ended with `status`: `command` is memcached's cmd= word, `ttl` the new
  // item's remaining seconds (0: none), `size` its value size, `size_class` its class (0: none).
  void stored(std::string_view command, std::string_view key, engine::StoreStatus status,
              std::int64_t ttl, std::size_t size, std::uint32_t size_class);
  // A classic delete named `key`.
  void delete_requested(std::string_view key);

 private:
  AdminState& admin_;
  int client_fd_ = -1;
  std::string line_;
};

}  // namespace pmcached::server

#include "server/command_monitor.h"

#include "protocol/command.h"
#include "server/admin_commands.h"

namespace pmcached::server {
namespace {

std::string_view status_word(engine::StoreStatus status) noexcept {
  switch (status) {
    case engine::StoreStatus::kStored: return "stored";
    case engine::StoreStatus::kExists: return "exists";
    case engine::StoreStatus::kNotFound: return "not_found";
    case engine::StoreStatus::kTooLarge: return "too_large";
    case engine::StoreStatus::kOutOfMemory: return "no_memory";
    default: return "not_stored";
  }
}

}  // namespace

void CommandMonitor::fetched(std::string_view key, const engine::ItemView* item, bool classic) {
  if (classic && admin_.prefixes.enabled()) admin_.prefixes.record_get(key, item != nullptr);
  if (!admin_.watchers.wants(protocol::kWatchFetchers)) return;
  line_.assign("type=item_get key=");
  append_uri_encoded(line_, key);
  line_.append(item != nullptr ? " status=found clsid=" : " status=not_found clsid=");
  line_.append(std::to_string(item != nullptr ? item->size_class : 0));
  line_.append(" cfd=").append(std::to_string(client_fd_));
  line_.append(" size=").append(std::to_string(item != nullptr ? item->value.size() : 0));
  admin_.watchers.publish(protocol::kWatchFetchers, line_);
}

void CommandMonitor::store_requested(std::string_view key) {
  if (admin_.prefixes.enabled()) admin_.prefixes.record_set(key);
}

void CommandMonitor::stored(std::string_view command, std::string_view key,
                            engine::StoreStatus status, std::int64_t ttl, std::size_t size,
                            std::uint32_t size_class) {
  if (!admin_.watchers.wants(protocol::kWatchMutations)) return;
  line_.assign("type=item_store key=");
  append_uri_encoded(line_, key);
  line_.append(" status=").append(status_word(status));
  line_.append(" cmd=").append(command);
  line_.append(" ttl=").append(std::to_string(ttl > 0 ? ttl : 0));
  line_.append(" clsid=").append(std::to_string(size_class));
  line_.append(" cfd=").append(std::to_string(client_fd_));
  line_.append(" size=").append(std::to_string(size));
  admin_.watchers.publish(protocol::kWatchMutations, line_);
}

void CommandMonitor::delete_requested(std::string_view key) {
  if (admin_.prefixes.enabled()) admin_.prefixes.record_delete(key);
}

}  // namespace pmcached::server

#include "protocol/command.h"

#include <utility>

namespace pmcached::protocol {

void Command::clear() {
  // Keep the buffers of the three growable members; reset everything else to its default
  // (so a field added to Command later is reset too). Empty containers do not allocate.
  std::vector<std::string_view> kept_keys = std::move(keys);
  std::vector<MetaFlag> kept_flags = std::move(meta.in_order);
  std::string kept_decoded = std::move(decoded_key);
  *this = Command{};
  kept_keys.clear();
  kept_flags.clear();
  kept_decoded.clear();
  keys = std::move(kept_keys);
  meta.in_order = std::move(kept_flags);
  decoded_key = std::move(kept_decoded);
}

}  // namespace pmcached::protocol

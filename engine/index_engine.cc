// IndexEngine's default recovery helper: dropping corrupt records by the keys they hold.
#include "engine/index_engine.h"

#include <algorithm>
#include <string>
#include <utility>

namespace pmcached::engine {

std::vector<ItemRef> IndexEngine::drop_corrupt(const std::vector<ItemRef>& corrupt) {
  std::vector<ItemRef> wanted = corrupt;
  std::sort(wanted.begin(), wanted.end());
  std::vector<std::pair<std::string, ItemRef>> found;
  scan("", [&](std::string_view key, ItemRef ref) {
    if (std::binary_search(wanted.begin(), wanted.end(), ref)) found.emplace_back(key, ref);
    return true;
  });
  std::vector<ItemRef> removed;
  for (const auto& [key, ref] : found) {
    // A damaged key can be another item's: erase only what the key still leads to.
    if (lookup(key) == ref && erase(key) == ref) removed.push_back(ref);
  }
  return removed;
}

}  // namespace pmcached::engine

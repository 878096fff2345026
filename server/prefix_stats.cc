#include "server/prefix_stats.h"

namespace pmcached::server {

PrefixStats::Counts* PrefixStats::find(std::string_view key) {
  // memcached reads the key as a C string: a NUL ends the search too.
  const std::size_t end = key.find_first_of(std::string_view("\0:", 2));
  if (end == std::string_view::npos || key[end] != kDelimiter) return nullptr;
  const std::string_view prefix = key.substr(0, end);
  auto it = prefixes_.find(prefix);
  if (it == prefixes_.end()) it = prefixes_.emplace(std::string(prefix), Counts{}).first;
  return &it->second;
}

void PrefixStats::record_get(std::string_view key, bool hit) {
  std::lock_guard lock(mutex_);
  if (Counts* c = find(key)) {
    ++c->get;
    if (hit) ++c->hit;
  }
}

void PrefixStats::record_set(std::string_view key) {
  std::lock_guard lock(mutex_);
  if (Counts* c = find(key)) ++c->set;
}

void PrefixStats::record_delete(std::string_view key) {
  std::lock_guard lock(mutex_);
  if (Counts* c = find(key)) ++c->del;
}

void PrefixStats::dump(std::string& out) const {
  std::lock_guard lock(mutex_);
  for (const auto& [prefix, c] : prefixes_) {
    out.append("PREFIX ").append(prefix);
    out.append(" get ").append(std::to_string(c.get));
    out.append(" hit ").append(std::to_string(c.hit));
    out.append(" set ").append(std::to_string(c.set));
    out.append(" del ").append(std::to_string(c.del));
    out.append("\r\n");
  }
  out.append("END\r\n");
}

void PrefixStats::clear() {
  std::lock_guard lock(mutex_);
  prefixes_.clear();
}

}  // namespace pmcached::server

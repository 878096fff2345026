// Key tags. See key_tag.h.
#include "engine/btree/key_tag.h"

#include <xxhash.h>

namespace pmcached::engine::btree {

std::uint64_t key_tag(std::string_view key) noexcept {
  // The high bits of XXH3, so that FPTree's fingerprint (its low byte) and the tag are unrelated.
  return (XXH3_64bits(key.data(), key.size()) >> 49) << kRefBits;
}

}  // namespace pmcached::engine::btree

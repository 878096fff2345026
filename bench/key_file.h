// read_key_file: a benchmark's keys from a file, one per line (scripts/make-keysets.py writes
// them), in the file's order. Every key must be one a memcached text command can carry: 1..250
// bytes, none of them a space or a control character (<= 0x20 or 0x7f); bytes >= 0x80 are
// allowed. Keys must be distinct: the benchmarks check each GET against the key's own value.
// The last line may lack its '\n'.
//
// Thread safety: a function of the file alone.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace pmcached::bench {

inline constexpr std::size_t kMaxKeyBytes = 250;

// At most `limit` keys (0: all). Throws std::runtime_error naming the file and line of the first
// key that breaks a rule, or if the file cannot be read or holds no key.
[[nodiscard]] std::vector<std::string> read_key_file(const std::string& path,
                                                     std::size_t limit = 0);

}  // namespace pmcached::bench

// A comma-separated command-line list ("wort,dram", "1,2,4") split into its items; empty items
// are dropped.
//
// Thread safety: a pure function.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace pmcached::bench {

[[nodiscard]] inline std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    if (end > begin) out.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

}  // namespace pmcached::bench

// read_key_file. See key_file.h.
#include "bench/key_file.h"

#include <fstream>
#include <stdexcept>
#include <string_view>
#include <unordered_set>

namespace pmcached::bench {

std::vector<std::string> read_key_file(const std::string& path, std::size_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read key file " + path);
  std::vector<std::string> keys;
  std::unordered_set<std::string_view> seen;
  std::string line;
  std::size_t number = 0;
  const auto bad = [&](const std::string& why) {
    return std::runtime_error(path + ":" + std::to_string(number) + ": " + why);
  };
  while ((limit == 0 || keys.size() < limit) && std::getline(in, line)) {
    ++number;
    if (line.empty()) throw bad("an empty key");
    if (line.size() > kMaxKeyBytes) {
      throw bad("a key of " + std::to_string(line.size()) + " bytes (at most " +
                std::to_string(kMaxKeyBytes) + ")");
    }
    for (const char c : line) {
      const auto byte = static_cast<unsigned char>(c);
      if (byte <= 0x20 || byte == 0x7f) throw bad("a key with a space or control byte");
    }
    keys.push_back(std::move(line));
  }
  if (in.bad()) throw std::runtime_error("error reading key file " + path);
  if (keys.empty()) throw std::runtime_error("key file " + path + " holds no key");
  // After reading: views into `keys` stay valid once it no longer grows.
  seen.reserve(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    number = i + 1;
    if (!seen.insert(keys[i]).second) throw bad("a key given twice");
  }
  return keys;
}

}  // namespace pmcached::bench

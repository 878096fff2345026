#include "protocol/base64.h"

#include <array>
#include <cstdint>

namespace pmcached::protocol {
namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::uint8_t kNotBase64 = 0x80;

constexpr std::array<std::uint8_t, 256> make_decode_table() {
  std::array<std::uint8_t, 256> table{};
  for (auto& entry : table) entry = kNotBase64;
  for (std::size_t i = 0; i < kAlphabet.size(); ++i) {
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::uint8_t>(i);
  }
  table['='] = 0;
  return table;
}

constexpr auto kDecode = make_decode_table();

}  // namespace

void base64_encode_append(std::string_view bytes, std::string& out) {
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t n = (static_cast<unsigned char>(bytes[i]) << 16) |
                            (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                            static_cast<unsigned char>(bytes[i + 2]);
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(kAlphabet[(n >> 6) & 63]);
    out.push_back(kAlphabet[n & 63]);
  }
  const std::size_t rest = bytes.size() - i;
  if (rest == 0) return;
  std::uint32_t n = static_cast<unsigned char>(bytes[i]) << 16;
  if (rest == 2) n |= static_cast<unsigned char>(bytes[i + 1]) << 8;
  out.push_back(kAlphabet[(n >> 18) & 63]);
  out.push_back(kAlphabet[(n >> 12) & 63]);
  out.push_back(rest == 2 ? kAlphabet[(n >> 6) & 63] : '=');
  out.push_back('=');
}

// memcached's decoder: characters outside the alphabet are skipped, the remaining count
// must be a non-zero multiple of 4, and decoding stops after the first block that holds
// padding ("=" once or twice; more is an error).
bool base64_decode(std::string_view text, std::string& out) {
  std::size_t count = 0;
  for (const char c : text) count += kDecode[static_cast<unsigned char>(c)] != kNotBase64;
  out.clear();
  if (count == 0 || count % 4 != 0) return false;
  std::array<std::uint8_t, 4> block{};
  std::size_t filled = 0;
  int pad = 0;
  for (const char c : text) {
    const std::uint8_t value = kDecode[static_cast<unsigned char>(c)];
    if (value == kNotBase64) continue;
    pad += c == '=';
    block[filled++] = value;
    if (filled < 4) continue;
    filled = 0;
    out.push_back(static_cast<char>((block[0] << 2) | (block[1] >> 4)));
    out.push_back(static_cast<char>((block[1] << 4) | (block[2] >> 2)));
    out.push_back(static_cast<char>((block[2] << 6) | block[3]));
    if (pad == 0) continue;
    if (pad > 2) return false;
    for (int dropped = 0; dropped < pad; ++dropped) out.pop_back();
    break;
  }
  return !out.empty();
}

}  // namespace pmcached::protocol

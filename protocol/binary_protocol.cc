#include "protocol/binary_protocol.h"

namespace pmcached::protocol::binary {

Header decode_header(const char* p) noexcept {
  Header h;
  h.magic = static_cast<std::uint8_t>(p[0]);
  h.opcode = static_cast<std::uint8_t>(p[1]);
  h.key_length = static_cast<std::uint16_t>(load_be(p + 2, 2));
  h.extras_length = static_cast<std::uint8_t>(p[4]);
  h.data_type = static_cast<std::uint8_t>(p[5]);
  h.vbucket_or_status = static_cast<std::uint16_t>(load_be(p + 6, 2));
  h.body_length = static_cast<std::uint32_t>(load_be(p + 8, 4));
  h.opaque = static_cast<std::uint32_t>(load_be(p + 12, 4));
  h.cas = load_be(p + 16, 8);
  return h;
}

void encode_header(const Header& h, char* p) noexcept {
  p[0] = static_cast<char>(h.magic);
  p[1] = static_cast<char>(h.opcode);
  store_be(p + 2, h.key_length, 2);
  p[4] = static_cast<char>(h.extras_length);
  p[5] = static_cast<char>(h.data_type);
  store_be(p + 6, h.vbucket_or_status, 2);
  store_be(p + 8, h.body_length, 4);
  store_be(p + 12, h.opaque, 4);
  store_be(p + 16, h.cas, 8);
}

}  // namespace pmcached::protocol::binary

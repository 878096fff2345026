#include "tests/protocol/binary_test_util.h"

namespace pmcached::protocol::test {

std::string be32(std::uint32_t v) {
  std::string s(4, '\0');
  binary::store_be(s.data(), v, 4);
  return s;
}

std::string be64(std::uint64_t v) {
  std::string s(8, '\0');
  binary::store_be(s.data(), v, 8);
  return s;
}

std::string frame(const FrameSpec& spec) {
  binary::Header h;
  h.magic = spec.magic;
  h.opcode = spec.opcode;
  h.key_length =
      static_cast<std::uint16_t>(spec.key_length >= 0 ? spec.key_length : spec.key.size());
  h.extras_length =
      static_cast<std::uint8_t>(spec.extras_length >= 0 ? spec.extras_length : spec.extras.size());
  h.body_length = static_cast<std::uint32_t>(
      spec.body_length >= 0 ? spec.body_length
                            : spec.extras.size() + spec.key.size() + spec.value.size());
  h.opaque = spec.opaque;
  h.cas = spec.cas;
  std::string out(binary::kHeaderSize, '\0');
  binary::encode_header(h, out.data());
  return out + spec.extras + spec.key + spec.value;
}

std::vector<Response> responses(std::string_view bytes, std::string* rest) {
  std::vector<Response> out;
  while (bytes.size() >= binary::kHeaderSize) {
    const binary::Header h = binary::decode_header(bytes.data());
    if (bytes.size() < binary::kHeaderSize + h.body_length) break;
    Response r;
    r.magic = h.magic;
    r.opcode = h.opcode;
    r.status = h.vbucket_or_status;
    r.opaque = h.opaque;
    r.cas = h.cas;
    r.data_type = h.data_type;
    std::string_view body = bytes.substr(binary::kHeaderSize, h.body_length);
    r.extras = body.substr(0, h.extras_length);
    r.key = body.substr(h.extras_length, h.key_length);
    r.value = body.substr(h.extras_length + h.key_length);
    out.push_back(std::move(r));
    bytes.remove_prefix(binary::kHeaderSize + h.body_length);
  }
  if (rest != nullptr) rest->assign(bytes);
  return out;
}

}  // namespace pmcached::protocol::test

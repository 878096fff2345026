// Helpers for the binary-protocol tests: request frames built byte by byte, and response
// frames decoded back into fields.
//
// Thread safety: plain functions over local data.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/binary_protocol.h"

namespace pmcached::protocol::test {

// A request frame; the lengths default to those of the parts given.
struct FrameSpec {
  std::uint8_t opcode = 0;
  std::string extras = {};
  std::string key = {};
  std::string value = {};
  std::uint32_t opaque = 0;
  std::uint64_t cas = 0;
  std::uint8_t magic = binary::kRequestMagic;
  int key_length = -1;     // -1: key.size()
  int extras_length = -1;  // -1: extras.size()
  long body_length = -1;   // -1: extras + key + value
};

std::string frame(const FrameSpec& spec);

// Big-endian fields for extras.
std::string be32(std::uint32_t v);
std::string be64(std::uint64_t v);

struct Response {
  std::uint8_t magic = 0;
  std::uint8_t opcode = 0;
  std::uint16_t status = 0;
  std::uint32_t opaque = 0;
  std::uint64_t cas = 0;
  std::uint8_t data_type = 0;
  std::string extras, key, value;
};

// Decodes every complete response frame in `bytes`; `rest` gets what is left over.
std::vector<Response> responses(std::string_view bytes, std::string* rest = nullptr);

}  // namespace pmcached::protocol::test

// BinaryWriter: binary-protocol response frames appended to an output buffer. No I/O.
//
// A response echoes the request's opcode (quiet variants included) and opaque; its data type
// is 0 (raw bytes), as memcached sends it.
//
// Thread safety: a writer wraps one connection's buffer; not shared.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/binary_protocol.h"

namespace pmcached::protocol {

class BinaryWriter {
 public:
  explicit BinaryWriter(std::string& out) : out_(out) {}

  // One frame: header, then extras, key and value.
  void response(std::uint8_t opcode, std::uint32_t opaque, binary::Status status, std::uint64_t cas,
                std::string_view extras, std::string_view key, std::string_view value);
  // A success without a body (cas 0 unless given).
  void success(std::uint8_t opcode, std::uint32_t opaque, std::uint64_t cas = 0) {
    response(opcode, opaque, binary::Status::kSuccess, cas, {}, {}, {});
  }
  // An error with memcached's text for `status`, or with `text`.
  void error(std::uint8_t opcode, std::uint32_t opaque, binary::Status status) {
    error(opcode, opaque, status, binary::status_text(status));
  }
  void error(std::uint8_t opcode, std::uint32_t opaque, binary::Status status,
             std::string_view text) {
    response(opcode, opaque, status, 0, {}, {}, text);
  }

 private:
  std::string& out_;
};

}  // namespace pmcached::protocol

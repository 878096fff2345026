#include "protocol/binary_writer.h"

namespace pmcached::protocol {

void BinaryWriter::response(std::uint8_t opcode, std::uint32_t opaque, binary::Status status,
                            std::uint64_t cas, std::string_view extras, std::string_view key,
                            std::string_view value) {
  binary::Header h;
  h.magic = binary::kResponseMagic;
  h.opcode = opcode;
  h.key_length = static_cast<std::uint16_t>(key.size());
  h.extras_length = static_cast<std::uint8_t>(extras.size());
  h.vbucket_or_status = static_cast<std::uint16_t>(status);
  h.body_length = static_cast<std::uint32_t>(extras.size() + key.size() + value.size());
  h.opaque = opaque;
  h.cas = cas;
  const std::size_t at = out_.size();
  out_.resize(at + binary::kHeaderSize);
  binary::encode_header(h, out_.data() + at);
  out_.append(extras);
  out_.append(key);
  out_.append(value);
}

}  // namespace pmcached::protocol

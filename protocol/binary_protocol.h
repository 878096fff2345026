// The memcached binary protocol's constants (memcached's protocol_binary.h): magic bytes,
// opcodes, response statuses, and the 24-byte frame header. Multi-byte fields are big-endian.
//
// Thread safety: constants and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace pmcached::protocol::binary {

inline constexpr std::uint8_t kRequestMagic = 0x80;
inline constexpr std::uint8_t kResponseMagic = 0x81;
inline constexpr std::size_t kHeaderSize = 24;

// The opcodes memcached 1.6.18 serves; any other is "Unknown command".
enum class Opcode : std::uint8_t {
  kGet = 0x00,
  kSet = 0x01,
  kAdd = 0x02,
  kReplace = 0x03,
  kDelete = 0x04,
  kIncrement = 0x05,
  kDecrement = 0x06,
  kQuit = 0x07,
  kFlush = 0x08,
  kGetQ = 0x09,
  kNoop = 0x0a,
  kVersion = 0x0b,
  kGetK = 0x0c,
  kGetKQ = 0x0d,
  kAppend = 0x0e,
  kPrepend = 0x0f,
  kStat = 0x10,
  kSetQ = 0x11,
  kAddQ = 0x12,
  kReplaceQ = 0x13,
  kDeleteQ = 0x14,
  kIncrementQ = 0x15,
  kDecrementQ = 0x16,
  kQuitQ = 0x17,
  kFlushQ = 0x18,
  kAppendQ = 0x19,
  kPrependQ = 0x1a,
  kVerbosity = 0x1b,  // not served by memcached 1.6.18: "Unknown command"
  kTouch = 0x1c,
  kGat = 0x1d,
  kGatQ = 0x1e,
  kSaslListMechs = 0x20,
  kSaslAuth = 0x21,
  kSaslStep = 0x22,
  kGatK = 0x23,
  kGatKQ = 0x24,
};

enum class Status : std::uint16_t {
  kSuccess = 0x00,
  kKeyNotFound = 0x01,
  kKeyExists = 0x02,
  kTooLarge = 0x03,
  kInvalidArguments = 0x04,
  kNotStored = 0x05,
  kDeltaBadValue = 0x06,
  kAuthError = 0x20,
  kUnknownCommand = 0x81,
  kOutOfMemory = 0x82,
};

// The opcode a quiet variant stands for (SETQ -> SET, ...), or `op` itself.
[[nodiscard]] constexpr Opcode loud(Opcode op) noexcept {
  switch (op) {
    case Opcode::kGetQ: return Opcode::kGet;
    case Opcode::kGetKQ: return Opcode::kGetK;
    case Opcode::kSetQ: return Opcode::kSet;
    case Opcode::kAddQ: return Opcode::kAdd;
    case Opcode::kReplaceQ: return Opcode::kReplace;
    case Opcode::kDeleteQ: return Opcode::kDelete;
    case Opcode::kIncrementQ: return Opcode::kIncrement;
    case Opcode::kDecrementQ: return Opcode::kDecrement;
    case Opcode::kQuitQ: return Opcode::kQuit;
    case Opcode::kFlushQ: return Opcode::kFlush;
    case Opcode::kAppendQ: return Opcode::kAppend;
    case Opcode::kPrependQ: return Opcode::kPrepend;
    case Opcode::kGatQ: return Opcode::kGat;
    case Opcode::kGatKQ: return Opcode::kGatK;
    default: return op;
  }
}

// memcached's body text for an error status (write_bin_error without a message).
[[nodiscard]] constexpr std::string_view status_text(Status status) noexcept {
  switch (status) {
    case Status::kOutOfMemory: return "Out of memory";
    case Status::kUnknownCommand: return "Unknown command";
    case Status::kKeyNotFound: return "Not found";
    case Status::kInvalidArguments: return "Invalid arguments";
    case Status::kKeyExists: return "Data exists for key.";
    case Status::kTooLarge: return "Too large.";
    case Status::kDeltaBadValue: return "Non-numeric server-side value for incr or decr";
    case Status::kNotStored: return "Not stored.";
    case Status::kAuthError: return "Auth failure.";
    case Status::kSuccess: return "";
  }
  return "";
}

// A frame header, decoded (request) or to be encoded (response: `status` in place of the
// request's vbucket field).
struct Header {
  std::uint8_t magic = kRequestMagic;
  std::uint8_t opcode = 0;
  std::uint16_t key_length = 0;
  std::uint8_t extras_length = 0;
  std::uint8_t data_type = 0;
  std::uint16_t vbucket_or_status = 0;
  std::uint32_t body_length = 0;
  std::uint32_t opaque = 0;  // copied byte for byte, never byte-swapped
  std::uint64_t cas = 0;
};

// Big-endian field access.
[[nodiscard]] inline std::uint64_t load_be(const char* p, std::size_t bytes) noexcept {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
inline void store_be(char* p, std::uint64_t v, std::size_t bytes) noexcept {
  for (std::size_t i = bytes; i-- > 0;) {
    p[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
}

// Decodes the first kHeaderSize bytes at `p`.
[[nodiscard]] Header decode_header(const char* p) noexcept;
// Encodes `header` into the kHeaderSize bytes at `p`.
void encode_header(const Header& header, char* p) noexcept;

}  // namespace pmcached::protocol::binary

// BinaryParser: binary-protocol request frames -> Command, incremental, no I/O.
//
// Same contract as the text Parser (parser.h): parse() answers kComplete (one request in
// `command`, `consumed` bytes used), kNeedMore (nothing consumed), kSkipped (`consumed` bytes
// of a refused value dropped) or kError (`error_reply` to send, possibly a close). A request
// becomes the same neutral Command as its text twin (GET -> kGets, SET -> kSet, ...) with
// `command.binary` holding its envelope (opcode, opaque, quiet) and `cas_unique` the header's
// cas; string_views point into the input, as with the text parser.
//
// It checks frames as memcached 1.6.18 does (proto_bin.c), in its order:
//  - a header whose magic is not 0x80: close without a reply;
//  - key or key + extras longer than the body: "Unknown command", then close;
//  - a key over 250 bytes, or extras/key/body lengths an opcode does not allow: "Invalid
//    arguments", then close;
//  - an opcode memcached does not serve (VERBOSITY included; SASL, as memcached built without
//    SASL answers it): "Unknown command", and the connection goes on after dropping the
//    frame's body. Like memcached it drops `body length` bytes counted from the end of the key,
//    so a frame with a key or extras also eats that many bytes of what follows;
//  - a value too large for an item (-I): kComplete with `command.too_large` (the server answers
//    "Too large." and unlinks the key of a SET, as memcached does), then the value is dropped.
// Only the header, extras and key are needed before a frame is judged, so an oversized body is
// never buffered. Like memcached, only SET/ADD/REPLACE/APPEND/PREPEND take a value: bytes that
// follow the key of another opcode whose length rules allow them (STAT, TOUCH, GAT) are read as
// the next frame.
//
// `error_reply` views a frame owned by the parser, valid until the next parse() call.
//
// Thread safety: one BinaryParser per connection; not shared.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "protocol/binary_protocol.h"
#include "protocol/command.h"
#include "protocol/parser.h"

namespace pmcached::protocol {

class BinaryParser {
 public:
  explicit BinaryParser(ParserLimits limits = {});

  [[nodiscard]] ParseResult parse(std::string_view input, Command& command);

  // True while the parser is dropping a refused value or an unknown command's body.
  [[nodiscard]] bool swallowing() const noexcept { return swallow_remaining_ > 0; }

 private:
  // An error frame for the request `header`, with memcached's text for `status`.
  ParseResult error(const binary::Header& header, binary::Status status, std::size_t consumed,
                    bool close);
  // Fills `command` from a frame whose lengths are valid for its opcode.
  void fill(const binary::Header& header, std::string_view extras, std::string_view key,
            Command& command) const;

  ParserLimits limits_;
  std::size_t swallow_remaining_ = 0;
  std::string error_frame_;
};

}  // namespace pmcached::protocol

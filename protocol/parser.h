// Parser: bytes -> Command, incremental, no I/O.
//
// The caller owns a buffer of unconsumed input and calls parse() on it; parse() answers
// kComplete (one command, `consumed` bytes used, including a storage command's data
// block), kNeedMore (nothing consumed; call again with more bytes), kSkipped (`consumed`
// bytes of a swallowed data block dropped; nothing to reply), or kError (a reply to send
// in `error_reply`, `consumed` bytes to drop, and possibly a close; the reply is empty
// when memcached would send nothing: an error silenced by noreply, or a silent close).
//
// A storage command whose data block cannot be accepted (object too large) is answered
// at once and the parser then swallows the declared data block, possibly across many
// later parse() calls, as memcached does, so the stream stays in sync.
//
// Thread safety: one Parser per connection; not shared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "protocol/command.h"

namespace pmcached::protocol {

struct ParserLimits {
  std::size_t max_key_length = 250;
  std::size_t item_size_max = 1u << 20;  // -I: larger data blocks are refused
  std::size_t max_line_length = 2048;    // a longer line without '\n' closes the
                                         // connection (except long get lines)
  std::size_t max_get_line_length = 1u << 20;  // bound for multi-key get lines
};

enum class ParseStatus : std::uint8_t { kComplete, kNeedMore, kSkipped, kError };

struct ParseResult {
  ParseStatus status = ParseStatus::kNeedMore;
  std::size_t consumed = 0;       // bytes of input used by this call
  std::string_view error_reply;   // kError: the full reply, e.g. "ERROR\r\n" (static text)
  bool close_connection = false;  // kError: close after sending error_reply
};

class Parser {
 public:
  explicit Parser(ParserLimits limits = {});

  // Parses the next command at the start of `input` into `command`.
  [[nodiscard]] ParseResult parse(std::string_view input, Command& command);

  // True while the parser is dropping the data block of a refused storage command.
  [[nodiscard]] bool swallowing() const noexcept { return swallow_remaining_ > 0; }

  [[nodiscard]] const ParserLimits& limits() const noexcept { return limits_; }

 private:
  ParserLimits limits_;
  std::size_t swallow_remaining_ = 0;
};

}  // namespace pmcached::protocol

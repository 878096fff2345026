// Parser: bytes -> Command, incremental, no I/O.
//
// The caller owns a buffer of unconsumed input and calls parse() on it; parse() answers
// kComplete (one command, `consumed` bytes used, including a storage command's data
// block), kNeedMore (nothing consumed; call again with more bytes), kSkipped (`consumed`
// bytes of a command line or a swallowed data block dropped; nothing to reply yet), or
// kError (a reply to send in `error_reply`, `consumed` bytes to drop, and possibly a close;
// the reply is empty when memcached would send nothing: an error silenced by noreply, or a
// silent close).
//
// A storage command whose data block cannot be accepted (object too large, or a bad meta
// flag) makes the parser swallow the declared block (<bytes> + 2, unchecked), possibly across
// many later parse() calls, as memcached does, so the stream stays in sync. Like memcached,
// the answer comes only once the block is swallowed: the call that drops its last byte
// answers kError with the reply, or, for a block refused as too large, kComplete with a
// Command marked `too_large` (its key owned by the Command), because the server must act on
// it: memcached unlinks the old item of a `set` or `ms` that it refuses.
//
// A command line ends at its first NUL byte, as memcached reads it as a C string.
//
// Thread safety: one Parser per connection; not shared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/command.h"

namespace pmcached::protocol {

struct ParserLimits {
  std::size_t max_key_length = 250;
  std::size_t item_size_max = 1u << 20;        // -I: larger data blocks are refused
  std::size_t max_line_length = 2048;          // a longer line without '\n' closes the
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
  // Starts swallowing `length` + 2 bytes; `reply` (static text) or, if `too_large`, the
  // refused `command` is the answer once they are gone. Returns the answer to the line.
  ParseResult defer_until_swallowed(std::size_t line_size, std::size_t length,
                                    std::string_view reply, const Command* too_large);
  // The answer once the last swallowed byte (`consumed` in this call) is dropped.
  ParseResult deferred_answer(std::size_t consumed, Command& command);

  ParserLimits limits_;
  std::size_t swallow_remaining_ = 0;
  // What to answer when the swallow ends.
  std::string_view deferred_reply_;
  bool deferred_too_large_ = false;
  CommandKind deferred_kind_ = CommandKind::kSet;
  bool deferred_noreply_ = false;
  std::string deferred_key_;
};

}  // namespace pmcached::protocol

// Internals shared by the command-line parsers of parser.cc (classic commands) and
// meta_parser.cc (meta commands). Private to protocol/; not part of its interface.
//
// A command line is parsed by one function that fills the Command and answers a
// LineOutcome; Parser::parse() then reads or swallows the data block it asks for.
//
// Thread safety: pure functions and constants.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "protocol/command.h"
#include "protocol/parser.h"
#include "protocol/replies.h"

namespace pmcached::protocol::detail {

// memcached tokenises a command line into at most 23 tokens plus a terminal one
// (MAX_TOKENS = 24); every check on the count in memcached saturates below that, so
// counting up to kMax tokens gives the same answers.
struct Tokens {
  static constexpr std::size_t kMax = 24;
  std::array<std::string_view, kMax> token;
  std::size_t count = 0;  // tokens found, at most kMax
};

// Splits `line` on ' ' (memcached splits on spaces only; tabs belong to tokens).
inline void tokenize(std::string_view line, Tokens& out) noexcept {
  out.count = 0;
  std::size_t i = 0;
  const std::size_t n = line.size();
  while (out.count < Tokens::kMax) {
    while (i < n && line[i] == ' ') ++i;
    if (i == n) return;
    const std::size_t start = i;
    while (i < n && line[i] != ' ') ++i;
    out.token[out.count++] = line.substr(start, i - start);
  }
}

// What a command-line parser decided.
struct LineOutcome {
  enum class Kind : unsigned char {
    kDone,      // the command is complete
    kNeedData,  // complete once a data block of `data_length` bytes (+ "\r\n") is read
    kError,     // reply `error_reply` (may be empty: suppressed by noreply)
    kClose,     // close the connection without a reply
  };
  Kind kind = Kind::kDone;
  std::string_view error_reply;
  std::size_t data_length = 0;
  bool swallow = false;  // kError: also swallow data_length + 2 bytes

  static LineOutcome done() noexcept { return {}; }
  static LineOutcome need_data(std::size_t length) noexcept {
    return {Kind::kNeedData, {}, length, false};
  }
  static LineOutcome error(std::string_view text) noexcept {
    return {Kind::kError, text, 0, false};
  }
  static LineOutcome close_silently() noexcept { return {Kind::kClose, {}, 0, false}; }
  static LineOutcome error_and_swallow(std::string_view text, std::size_t length) noexcept {
    return {Kind::kError, text, length, true};
  }
};

// The size memcached gives an item (header, cas, key + NUL, client flags if not 0, data
// + "\r\n"); larger than -I is "too large". engine/store/item.h sizes items by the same rule.
[[nodiscard]] constexpr std::size_t memcached_item_size(std::size_t key_size,
                                                        std::size_t data_length,
                                                        std::uint32_t client_flags) noexcept {
  return 48 + 8 + key_size + 1 + (client_flags != 0 ? 4 : 0) + data_length + 2;
}

// The largest data length memcached accepts on a command line (it adds 2 to an int).
inline constexpr std::int32_t kMaxDataLength = 0x7fffffff - 2;

// Meta commands (mg ms md ma mn me); `tokens.token[0]` is the two-letter command.
[[nodiscard]] LineOutcome parse_meta_command(const Tokens& tokens, Command& command,
                                             const ParserLimits& limits);

// lru_crawler, slabs, cache_memlimit and watch (admin_parser.cc). False if `tokens` is none of
// them; else `outcome` is the answer.
[[nodiscard]] bool parse_admin_command(const Tokens& tokens, Command& command,
                                       LineOutcome& outcome);

// memcached's last resort for a line it does not know: if its last token (or its 23rd, when
// there are more) starts with "HTTP/", the client is a web browser or probe and the connection
// is closed without a word.
[[nodiscard]] bool looks_like_http(const Tokens& tokens) noexcept;

}  // namespace pmcached::protocol::detail

// Meta command lines (mg ms md ma mn me), checked in the order memcached 1.6.18 checks
// them so that a malformed line gets the same error text.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/base64.h"
#include "protocol/number_parse.h"
#include "protocol/parser_detail.h"

namespace pmcached::protocol::detail {
namespace {

// memcached refuses more than 20 tokens (command, key, flags and the terminal token).
constexpr std::size_t kMaxMetaTokens = 20;
// An O(opaque) token may be at most 32 bytes including its letter.
constexpr std::size_t kMaxOpaqueToken = 32;

// memcached's flag pre-parse: records every flag (in request order) and decodes the
// numeric ones. Returns an empty view on success, else the error reply. Duplicate and
// unknown flags stop at once; a bad value is remembered and parsing goes on, so a later
// bad value's text wins ("F" keeps the text it found, `error_text` at first).
std::string_view preparse_flags(const Tokens& tokens, std::size_t first, Command& command,
                                std::string_view error_text) {
  MetaFlags& meta = command.meta;
  std::array<std::uint64_t, 2> seen{};
  bool has_error = false;
  for (std::size_t i = first; i < tokens.count; ++i) {
    const std::string_view token = tokens.token[i];
    const auto letter = static_cast<unsigned char>(token[0]);
    if (letter >= 127 || (seen[letter >> 6] >> (letter & 63) & 1) != 0) {
      return reply::kDuplicateFlag;
    }
    seen[letter >> 6] |= std::uint64_t{1} << (letter & 63);
    const std::string_view value = token.substr(1);
    meta.in_order.push_back(MetaFlag{static_cast<char>(letter), value});
    switch (letter) {
      case 'b':
        meta.base64_key = true;
        if (base64_decode(tokens.token[1], command.decoded_key)) {
          command.key = command.decoded_key;
        } else {
          error_text = reply::kKeyDecode;
          has_error = true;
        }
        break;
      case 'N':
      case 'T':
      case 'R': {
        std::int32_t seconds = 0;
        if (!parse_i32(value, seconds)) {
          error_text = reply::kBadToken;
          has_error = true;
        } else if (letter == 'N') {
          meta.has_vivify = true;
          meta.vivify_ttl = seconds;
        } else if (letter == 'T') {
          meta.has_ttl = true;
          meta.ttl = seconds;
        } else {
          meta.has_recache = true;
          meta.recache_ttl = seconds;
        }
        break;
      }
      case 'O':
        meta.has_opaque = true;
        meta.opaque = value;
        break;
      case 'P':  // proxy hints: accepted and ignored
      case 'L': break;
      case 'c': meta.return_cas = true; break;
      case 'f': meta.return_flags = true; break;
      case 'h': meta.return_hit = true; break;
      case 'k': meta.return_key = true; break;
      case 'l': meta.return_last_access = true; break;
      case 'q': meta.quiet = true; break;
      case 's': meta.return_size = true; break;
      case 't': meta.return_ttl = true; break;
      case 'u': meta.no_bump = true; break;
      case 'v': meta.return_value = true; break;
      case 'I': meta.invalidate = true; break;
      case 'F':
        if (parse_u32(value, meta.client_flags)) {
          meta.has_client_flags = true;
        } else {
          has_error = true;
        }
        break;
      // x (md: drop the value) and E (explicit new cas) came after 1.6.18, which calls them
      // invalid flags; pmcached answers as 1.6.18 (README, "Protocol").
      case 'C':
        if (parse_u64(value, meta.compare_cas)) {
          meta.has_compare_cas = true;
        } else {
          error_text = reply::kBadToken;
          has_error = true;
        }
        break;
      case 'M':
        if (token.size() != 2) {
          error_text = reply::kMTokenLength;
          has_error = true;
        } else {
          meta.mode = token[1];
        }
        break;
      case 'J':
        if (parse_u64(value, meta.initial)) {
          meta.has_initial = true;
        } else {
          error_text = reply::kBadInitial;
          has_error = true;
        }
        break;
      case 'D':
        if (parse_u64(value, meta.delta)) {
          meta.has_delta = true;
        } else {
          error_text = reply::kBadMetaDelta;
          has_error = true;
        }
        break;
      default: return reply::kInvalidFlag;
    }
  }
  return has_error ? error_text : std::string_view{};
}

bool opaque_too_long(const MetaFlags& meta) noexcept {
  return meta.has_opaque && meta.opaque.size() + 1 > kMaxOpaqueToken;
}

// The checks mg, md and ma share before their flags: at least a key, the key's length,
// the number of flags. Sets the key. Returns an empty view when the line may go on.
std::string_view check_key_and_count(const Tokens& tokens, Command& command,
                                     const ParserLimits& limits, std::string_view too_many_flags) {
  if (tokens.count < 2) return reply::kError;
  if (tokens.token[1].size() > limits.max_key_length) return reply::kBadFormat;
  if (tokens.count + 1 > kMaxMetaTokens) return too_many_flags;
  command.key = tokens.token[1];
  return {};
}

LineOutcome parse_mg(const Tokens& tokens, Command& command, const ParserLimits& limits) {
  command.kind = CommandKind::kMetaGet;
  std::string_view error = check_key_and_count(tokens, command, limits, reply::kMgFlagsTooLong);
  if (error.empty()) error = preparse_flags(tokens, 2, command, reply::kBadFormat);
  // A too long opaque fails only once the item is handled (server/meta_flag_order.h).
  return error.empty() ? LineOutcome::done() : LineOutcome::error(error);
}

LineOutcome parse_md(const Tokens& tokens, Command& command, const ParserLimits& limits) {
  command.kind = CommandKind::kMetaDelete;
  std::string_view error = check_key_and_count(tokens, command, limits, reply::kFlagsTooLong);
  if (!error.empty()) return LineOutcome::error(error);
  if (!preparse_flags(tokens, 2, command, reply::kBadFormat).empty()) {
    return LineOutcome::error(reply::kInvalidOrDuplicateFlag);
  }
  if (opaque_too_long(command.meta)) return LineOutcome::error(reply::kOpaqueTooLong);
  return LineOutcome::done();
}

LineOutcome parse_ma(const Tokens& tokens, Command& command, const ParserLimits& limits) {
  command.kind = CommandKind::kMetaArithmetic;
  std::string_view error = check_key_and_count(tokens, command, limits, reply::kFlagsTooLong);
  if (!error.empty()) return LineOutcome::error(error);
  if (!preparse_flags(tokens, 2, command, reply::kBadFormat).empty()) {
    return LineOutcome::error(reply::kInvalidOrDuplicateFlag);
  }
  switch (command.meta.mode) {
    case 0:
    case 'I':
    case '+':
    case 'D':
    case '-': break;
    default: return LineOutcome::error(reply::kBadMaMode);
  }
  // A too long opaque fails only after the arithmetic (server/meta_flag_order.h).
  return LineOutcome::done();
}

LineOutcome parse_ms(const Tokens& tokens, Command& command, const ParserLimits& limits) {
  command.kind = CommandKind::kMetaSet;
  if (tokens.count < 2) return LineOutcome::error(reply::kError);
  if (tokens.token[1].size() > limits.max_key_length || tokens.count == 2) {
    return LineOutcome::error(reply::kBadFormat);
  }
  if (tokens.count + 1 > kMaxMetaTokens) return LineOutcome::error(reply::kFlagsTooLong);
  std::int32_t length = 0;
  if (!parse_i32(tokens.token[2], length) || length < 0 || length > kMaxDataLength) {
    return LineOutcome::error(reply::kBadFormat);
  }
  // From here on every error also swallows the data block, as memcached does.
  const auto data_length = static_cast<std::size_t>(length);
  command.key = tokens.token[1];
  std::string_view error = preparse_flags(tokens, 3, command, reply::kBadFormat);
  if (!error.empty()) return LineOutcome::error_and_swallow(error, data_length);
  if (opaque_too_long(command.meta)) error = reply::kOpaqueTooLong;
  switch (command.meta.mode) {
    case 0:
    case 'E':
    case 'A':
    case 'P':
    case 'R':
    case 'S': break;
    default: return LineOutcome::error_and_swallow(reply::kBadMsMode, data_length);
  }
  if (!error.empty()) return LineOutcome::error_and_swallow(error, data_length);
  return LineOutcome::need_data(data_length);
}

LineOutcome parse_me(const Tokens& tokens, Command& command, const ParserLimits& limits) {
  command.kind = CommandKind::kMetaDebug;
  if (tokens.count < 2 || tokens.token[1].size() > limits.max_key_length) {
    return LineOutcome::error(reply::kBadFormat);
  }
  command.key = tokens.token[1];
  if (tokens.count >= 3 && tokens.token[2] == "b") {
    command.meta.base64_key = true;
    if (!base64_decode(tokens.token[1], command.decoded_key)) {
      return LineOutcome::error(reply::kBadFormat);
    }
    command.key = command.decoded_key;
  }
  return LineOutcome::done();
}

}  // namespace

LineOutcome parse_meta_command(const Tokens& tokens, Command& command, const ParserLimits& limits) {
  switch (tokens.token[0][1]) {
    case 'g': return parse_mg(tokens, command, limits);
    case 's': return parse_ms(tokens, command, limits);
    case 'd': return parse_md(tokens, command, limits);
    case 'a': return parse_ma(tokens, command, limits);
    case 'e': return parse_me(tokens, command, limits);
    case 'n': command.kind = CommandKind::kMetaNoop; return LineOutcome::done();
    default: return LineOutcome::error(reply::kError);
  }
}

}  // namespace pmcached::protocol::detail

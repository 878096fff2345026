// Parser: line splitting, data blocks and swallowing, and the classic command lines.
// Meta command lines are in meta_parser.cc. Checks run in memcached 1.6.18's order so a
// malformed line gets the same reply, and `noreply` silences the same errors it does.
#include "protocol/parser.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "protocol/number_parse.h"
#include "protocol/parser_detail.h"

namespace pmcached::protocol {
namespace {

using detail::LineOutcome;
using detail::Tokens;

constexpr std::string_view kNoreply = "noreply";
// memcached gives up on a long line that does not start with get/gets after this many
// leading spaces.
constexpr std::size_t kMaxLeadingSpaces = 100;

// An error that `noreply` silences (memcached's out_string() after set_noreply_maybe()).
LineOutcome quiet_error(std::string_view text, bool noreply) noexcept {
  return LineOutcome::error(noreply ? std::string_view{} : text);
}

std::string_view trim_spaces(std::string_view text) noexcept {
  const std::size_t first = text.find_first_not_of(' ');
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(' ') - first + 1);
}

// A line without '\n' yet: wait, or give up on a line too long to be a command.
ParseResult incomplete_line(std::string_view input, const ParserLimits& limits) noexcept {
  if (input.size() <= limits.max_line_length) return {};
  const std::size_t start = std::min(input.find_first_not_of(' '), input.size());
  const std::string_view rest = input.substr(start);
  const bool multiget =
      start <= kMaxLeadingSpaces && (rest.starts_with("get ") || rest.starts_with("gets "));
  if (multiget && input.size() <= limits.max_get_line_length) return {};
  // memcached closes without a word.
  return ParseResult{ParseStatus::kError, input.size(), {}, true};
}

// get/gets/bget <key>*, gat/gats <exptime> <key>*; `rest` follows the command word.
LineOutcome parse_retrieval(std::string_view rest, CommandKind kind, Command& command,
                            const ParserLimits& limits) {
  command.kind = kind;
  std::size_t i = 0;
  const std::size_t n = rest.size();
  auto next_token = [&]() -> std::string_view {
    while (i < n && rest[i] == ' ') ++i;
    const std::size_t start = i;
    while (i < n && rest[i] != ' ') ++i;
    return rest.substr(start, i - start);
  };
  std::string_view token = next_token();
  if (token.empty()) return LineOutcome::error(reply::kError);
  if (kind == CommandKind::kGat || kind == CommandKind::kGats) {
    std::int32_t exptime = 0;
    if (!detail::parse_i32(token, exptime)) return LineOutcome::error(reply::kBadExptime);
    command.exptime = exptime;
    token = next_token();
  }
  for (; !token.empty(); token = next_token()) {
    if (token.size() > limits.max_key_length) {
      command.key_too_long = true;
      break;
    }
    command.keys.push_back(token);
  }
  return LineOutcome::done();
}

// set/add/replace/append/prepend <key> <flags> <exptime> <bytes> [noreply]
// cas <key> <flags> <exptime> <bytes> <cas unique> [noreply]
LineOutcome parse_storage(const Tokens& t, CommandKind kind, Command& command,
                          const ParserLimits& limits) {
  command.kind = kind;
  const bool is_cas = kind == CommandKind::kCas;
  const std::size_t arguments = is_cas ? 6 : 5;
  if (t.count != arguments && t.count != arguments + 1) return LineOutcome::error(reply::kError);
  command.noreply = t.token[t.count - 1] == kNoreply;
  if (t.token[1].size() > limits.max_key_length) {
    return quiet_error(reply::kBadFormat, command.noreply);
  }
  command.key = t.token[1];
  std::int32_t exptime = 0;
  std::int32_t length = 0;
  if (!detail::parse_u32(t.token[2], command.client_flags) ||
      !detail::parse_i32(t.token[3], exptime) || !detail::parse_i32(t.token[4], length) ||
      (is_cas && !detail::parse_u64(t.token[5], command.cas_unique)) || length < 0 ||
      length > detail::kMaxDataLength) {
    return quiet_error(reply::kBadFormat, command.noreply);
  }
  command.exptime = exptime;
  return LineOutcome::need_data(static_cast<std::size_t>(length));
}

// delete <key> [0] [noreply]
LineOutcome parse_delete(const Tokens& t, Command& command, const ParserLimits& limits) {
  command.kind = CommandKind::kDelete;
  if (t.count < 2 || t.count > 4) return LineOutcome::error(reply::kError);
  if (t.count > 2) {
    const bool hold_is_zero = t.token[2] == "0";
    command.noreply = t.token[t.count - 1] == kNoreply;
    const bool valid = (t.count == 3 && (hold_is_zero || command.noreply)) ||
                       (t.count == 4 && hold_is_zero && command.noreply);
    if (!valid) return quiet_error(reply::kBadDeleteFormat, command.noreply);
  }
  if (t.token[1].size() > limits.max_key_length) {
    return quiet_error(reply::kBadFormat, command.noreply);
  }
  command.key = t.token[1];
  return LineOutcome::done();
}

// incr|decr <key> <delta> [noreply], touch <key> <exptime> [noreply]
LineOutcome parse_key_and_number(const Tokens& t, CommandKind kind, Command& command,
                                 const ParserLimits& limits) {
  command.kind = kind;
  if (t.count != 3 && t.count != 4) return LineOutcome::error(reply::kError);
  command.noreply = t.token[t.count - 1] == kNoreply;
  if (t.token[1].size() > limits.max_key_length) {
    return quiet_error(reply::kBadFormat, command.noreply);
  }
  command.key = t.token[1];
  if (kind == CommandKind::kTouch) {
    std::int32_t exptime = 0;
    if (!detail::parse_i32(t.token[2], exptime)) {
      return quiet_error(reply::kBadExptime, command.noreply);
    }
    command.exptime = exptime;
  } else if (!detail::parse_u64(t.token[2], command.delta)) {
    return quiet_error(reply::kBadDelta, command.noreply);
  }
  return LineOutcome::done();
}

// flush_all [delay] [noreply]
LineOutcome parse_flush_all(const Tokens& t, Command& command) {
  command.kind = CommandKind::kFlushAll;
  if (t.count > 3) return LineOutcome::error(reply::kError);
  command.noreply = t.token[t.count - 1] == kNoreply;
  if (t.count != (command.noreply ? 2u : 1u)) {
    std::int32_t delay = 0;
    if (!detail::parse_i32(t.token[1], delay)) {
      return quiet_error(reply::kBadExptime, command.noreply);
    }
    command.delay = delay;
  }
  return LineOutcome::done();
}

// verbosity <level> [noreply]
LineOutcome parse_verbosity(const Tokens& t, Command& command) {
  command.kind = CommandKind::kVerbosity;
  if (t.count != 2 && t.count != 3) return LineOutcome::error(reply::kError);
  command.noreply = t.token[t.count - 1] == kNoreply;
  if (!detail::parse_u32(t.token[1], command.verbosity)) {
    return quiet_error(reply::kBadFormat, command.noreply);
  }
  return LineOutcome::done();
}

// Dispatches one command line (without its "\r\n").
LineOutcome parse_line(std::string_view line, Command& command, const ParserLimits& limits) {
  const std::size_t start = line.find_first_not_of(' ');
  if (start == std::string_view::npos) return LineOutcome::error(reply::kError);
  const std::size_t end = std::min(line.find(' ', start), line.size());
  const std::string_view name = line.substr(start, end - start);
  const std::string_view rest = line.substr(end);
  if (name.size() < 2) return LineOutcome::error(reply::kError);

  // The retrieval commands take any number of keys: no tokenising into a fixed array.
  if (name == "get") return parse_retrieval(rest, CommandKind::kGet, command, limits);
  if (name[0] == 'g') {
    if (name == "gets") return parse_retrieval(rest, CommandKind::kGets, command, limits);
    if (name == "gat") return parse_retrieval(rest, CommandKind::kGat, command, limits);
    if (name == "gats") return parse_retrieval(rest, CommandKind::kGats, command, limits);
    return LineOutcome::error(reply::kError);
  }
  if (name == "bget") return parse_retrieval(rest, CommandKind::kGet, command, limits);
  if (name == "stats") {
    command.kind = CommandKind::kStats;
    command.stats_group = trim_spaces(rest);
    Tokens tokens;
    detail::tokenize(line, tokens);
    // memcached keeps 23 tokens: the subcommand and its arguments are the 22 after "stats".
    for (std::size_t i = 1; i < std::min<std::size_t>(tokens.count, 23); ++i) {
      command.keys.push_back(tokens.token[i]);
    }
    if (command.keys.size() >= 3 && command.keys[0] == "cachedump") {
      command.admin.bad_number = !detail::parse_u32(command.keys[1], command.admin.number) ||
                                 !detail::parse_u32(command.keys[2], command.admin.limit);
    }
    return LineOutcome::done();
  }
  if (name == "shutdown") {
    command.kind = CommandKind::kShutdown;
    command.key = trim_spaces(rest);  // "" or the mode ("graceful"); the server judges it
    return LineOutcome::done();
  }

  Tokens tokens;
  detail::tokenize(line, tokens);
  if (name.size() == 2 && name[0] == 'm') {
    return detail::parse_meta_command(tokens, command, limits);
  }
  if (LineOutcome admin; detail::parse_admin_command(tokens, command, admin)) return admin;
  switch (name[0]) {
    case 's':
      if (name == "set") return parse_storage(tokens, CommandKind::kSet, command, limits);
      break;
    case 'a':
      if (name == "add") return parse_storage(tokens, CommandKind::kAdd, command, limits);
      if (name == "append") {
        return parse_storage(tokens, CommandKind::kAppend, command, limits);
      }
      break;
    case 'r':
      if (name == "replace") {
        return parse_storage(tokens, CommandKind::kReplace, command, limits);
      }
      break;
    case 'p':
      if (name == "prepend") {
        return parse_storage(tokens, CommandKind::kPrepend, command, limits);
      }
      break;
    case 'c':
      if (name == "cas") return parse_storage(tokens, CommandKind::kCas, command, limits);
      break;
    case 'd':
      if (name == "delete") return parse_delete(tokens, command, limits);
      if (name == "decr") {
        return parse_key_and_number(tokens, CommandKind::kDecr, command, limits);
      }
      break;
    case 'i':
      if (name == "incr") {
        return parse_key_and_number(tokens, CommandKind::kIncr, command, limits);
      }
      break;
    case 't':
      if (name == "touch") {
        return parse_key_and_number(tokens, CommandKind::kTouch, command, limits);
      }
      break;
    case 'f':
      if (name == "flush_all") return parse_flush_all(tokens, command);
      break;
    case 'v':
      if (name == "version") {
        command.kind = CommandKind::kVersion;
        return LineOutcome::done();
      }
      if (name == "verbosity") return parse_verbosity(tokens, command);
      break;
    case 'q':
      if (name == "quit") {
        command.kind = CommandKind::kQuit;
        return LineOutcome::done();
      }
      break;
    default: break;
  }
  // memcached answers ERROR for an unknown word that starts like one of its frequent commands;
  // only the other unknown lines get the HTTP check, which closes silently.
  static constexpr std::string_view kFrequentInitials = "gsacidt";
  if (kFrequentInitials.find(name[0]) == std::string_view::npos &&
      detail::looks_like_http(tokens)) {
    return LineOutcome::close_silently();
  }
  return LineOutcome::error(reply::kError);
}

}  // namespace

Parser::Parser(ParserLimits limits) : limits_(limits) {}

ParseResult Parser::parse(std::string_view input, Command& command) {
  if (swallow_remaining_ > 0) {
    if (input.empty()) return {};
    const std::size_t dropped = std::min(input.size(), swallow_remaining_);
    swallow_remaining_ -= dropped;
    if (swallow_remaining_ == 0) return deferred_answer(dropped, command);
    return ParseResult{ParseStatus::kSkipped, dropped, {}, false};
  }

  const auto* newline = static_cast<const char*>(std::memchr(input.data(), '\n', input.size()));
  if (newline == nullptr) return incomplete_line(input, limits_);
  const auto line_end = static_cast<std::size_t>(newline - input.data());
  const std::size_t line_size = line_end + 1;
  std::string_view line = input.substr(0, line_end);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  // memcached parses the line as a C string: it ends at the first NUL.
  if (const void* nul = std::memchr(line.data(), '\0', line.size()); nul != nullptr) {
    line = line.substr(0, static_cast<std::size_t>(static_cast<const char*>(nul) - line.data()));
  }

  command.clear();
  const LineOutcome outcome = parse_line(line, command, limits_);
  switch (outcome.kind) {
    case LineOutcome::Kind::kDone: return ParseResult{ParseStatus::kComplete, line_size, {}, false};
    case LineOutcome::Kind::kError:
      if (outcome.swallow) {
        return defer_until_swallowed(line_size, outcome.data_length, outcome.error_reply, nullptr);
      }
      return ParseResult{ParseStatus::kError, line_size, outcome.error_reply, false};
    case LineOutcome::Kind::kClose: return ParseResult{ParseStatus::kError, line_size, {}, true};
    case LineOutcome::Kind::kNeedData: break;
  }

  // A storage command: its data block follows the line. memcached sizes the item before it
  // reads the block, so "too large" wins over a bad block. Classic noreply silences the
  // errors below; meta ms (which has no command.noreply) always gets them.
  const std::size_t length = outcome.data_length;
  const std::uint32_t client_flags =
      command.kind == CommandKind::kMetaSet ? command.meta.client_flags : command.client_flags;
  if (detail::memcached_item_size(command.key.size(), length, client_flags) >
      limits_.item_size_max) {
    return defer_until_swallowed(line_size, length, {}, &command);
  }
  const std::size_t total = line_size + length + 2;
  if (input.size() < total) return {};
  if (input[total - 2] != '\r' || input[total - 1] != '\n') {
    // memcached reads <bytes>+2 and resumes parsing right after them.
    return ParseResult{ParseStatus::kError, total,
                       command.noreply ? std::string_view{} : reply::kBadDataChunk, false};
  }
  command.data = input.substr(line_size, length);
  return ParseResult{ParseStatus::kComplete, total, {}, false};
}

ParseResult Parser::defer_until_swallowed(std::size_t line_size, std::size_t length,
                                          std::string_view reply, const Command* too_large) {
  swallow_remaining_ = length + 2;
  deferred_reply_ = reply;
  deferred_too_large_ = too_large != nullptr;
  if (too_large != nullptr) {
    deferred_kind_ = too_large->kind;
    deferred_noreply_ = too_large->noreply;
    deferred_key_.assign(too_large->key);  // the input it points into is dropped meanwhile
  }
  return ParseResult{ParseStatus::kSkipped, line_size, {}, false};
}

ParseResult Parser::deferred_answer(std::size_t consumed, Command& command) {
  if (!deferred_too_large_)
    return ParseResult{ParseStatus::kError, consumed, deferred_reply_, false};
  command.clear();
  command.kind = deferred_kind_;
  command.noreply = deferred_noreply_;
  command.too_large = true;
  command.decoded_key.swap(deferred_key_);
  command.key = command.decoded_key;
  return ParseResult{ParseStatus::kComplete, consumed, {}, false};
}

}  // namespace pmcached::protocol

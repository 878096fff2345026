// BinaryParser: frame checks in memcached 1.6.18's order (try_read_command_binary, then
// dispatch_bin_command), then the opcode's fields into a neutral Command.
#include "protocol/binary_parser.h"

#include <algorithm>
#include <cstdint>

#include "protocol/binary_writer.h"
#include "protocol/parser_detail.h"

namespace pmcached::protocol {
namespace {

using binary::Header;
using binary::Opcode;
using binary::Status;

// What memcached does with a frame whose lengths passed the generic checks.
enum class Shape : std::uint8_t {
  kValid,    // serve it
  kInvalid,  // "Invalid arguments", close
  kUnknown,  // "Unknown command", drop `swallow` bytes, go on
};

struct Judgement {
  Shape shape = Shape::kValid;
  std::size_t swallow = 0;
};

// dispatch_bin_command's length rules per opcode (after the quiet variants are mapped).
Judgement judge(Opcode op, const Header& h) noexcept {
  const std::size_t ext = h.extras_length;
  const std::size_t key = h.key_length;
  const std::size_t body = h.body_length;
  const auto rule = [](bool ok) { return Judgement{ok ? Shape::kValid : Shape::kInvalid, 0}; };
  switch (op) {
    case Opcode::kVersion:
    case Opcode::kNoop:
    case Opcode::kQuit: return rule(ext == 0 && key == 0 && body == 0);
    case Opcode::kFlush: return rule(key == 0 && body == ext && (ext == 0 || ext == 4));
    case Opcode::kSet:
    case Opcode::kAdd:
    case Opcode::kReplace: return rule(ext == 8 && key != 0 && body >= key + 8);
    case Opcode::kGet:
    case Opcode::kGetK: return rule(ext == 0 && body == key && key > 0);
    case Opcode::kDelete: return rule(key > 0 && ext == 0 && body == key);
    case Opcode::kIncrement:
    case Opcode::kDecrement: return rule(key > 0 && ext == 20 && body == key + ext);
    case Opcode::kAppend:
    case Opcode::kPrepend: return rule(key > 0 && ext == 0);
    case Opcode::kStat: return rule(ext == 0);
    case Opcode::kTouch:
    case Opcode::kGat:
    case Opcode::kGatK: return rule(ext == 4 && key != 0);
    // memcached without SASL: "Unknown command", dropping the value after the mechanism.
    case Opcode::kSaslListMechs:
      if (ext != 0 || key != 0 || body != 0) return rule(false);
      return {Shape::kUnknown, 0};
    case Opcode::kSaslAuth:
    case Opcode::kSaslStep:
      if (ext != 0 || key == 0) return rule(false);
      return {Shape::kUnknown, body - key};
    default:
      // memcached's swallow of the whole body length, counted after extras and key.
      return {Shape::kUnknown, body};
  }
}

bool is_storage(Opcode op) noexcept {
  return op == Opcode::kSet || op == Opcode::kAdd || op == Opcode::kReplace ||
         op == Opcode::kAppend || op == Opcode::kPrepend;
}

// The stats group of a STAT key, as memcached's process_bin_stat reads it: "reset",
// "settings" and "detail" are matched as prefixes, the rest exactly.
std::string_view stats_group(std::string_view key) noexcept {
  if (key.starts_with("reset")) return "reset";
  if (key.starts_with("settings")) return "settings";
  if (key.starts_with("detail")) {
    const std::string_view rest = key.substr(6);
    if (rest.starts_with(" dump")) return "detail dump";
    if (rest.starts_with(" on")) return "detail on";
    if (rest.starts_with(" off")) return "detail off";
    return "detail";
  }
  return key;
}

// The groups memcached's binary STAT serves (its text-only ones, such as "conns", are "Not
// found"), and pmcached's own.
bool binary_stats_group(std::string_view group) noexcept {
  constexpr std::string_view kServed[] = {"",          "reset",      "settings", "detail dump",
                                          "detail on", "detail off", "items",    "slabs",
                                          "sizes",     "engine",     "pm",       "latency"};
  return std::find(std::begin(kServed), std::end(kServed), group) != std::end(kServed);
}

std::uint32_t u32(std::string_view bytes, std::size_t at) noexcept {
  return static_cast<std::uint32_t>(binary::load_be(bytes.data() + at, 4));
}

}  // namespace

BinaryParser::BinaryParser(ParserLimits limits) : limits_(limits) {}

ParseResult BinaryParser::error(const Header& header, Status status, std::size_t consumed,
                                bool close) {
  error_frame_.clear();
  BinaryWriter(error_frame_).error(header.opcode, header.opaque, status);
  return ParseResult{ParseStatus::kError, consumed, error_frame_, close};
}

ParseResult BinaryParser::parse(std::string_view input, Command& command) {
  if (swallow_remaining_ > 0) {
    if (input.empty()) return {};
    const std::size_t dropped = std::min(input.size(), swallow_remaining_);
    swallow_remaining_ -= dropped;
    return ParseResult{ParseStatus::kSkipped, dropped, {}, false};
  }
  if (input.size() < binary::kHeaderSize) return {};
  const Header h = binary::decode_header(input.data());
  if (h.magic != binary::kRequestMagic) {
    return ParseResult{ParseStatus::kError, input.size(), {}, true};  // memcached: no reply
  }
  const std::size_t fixed = binary::kHeaderSize + h.extras_length + h.key_length;
  if (input.size() < fixed) return {};
  if (h.key_length > h.body_length || std::size_t{h.key_length} + h.extras_length > h.body_length) {
    return error(h, Status::kUnknownCommand, fixed, true);
  }
  if (h.key_length > limits_.max_key_length)
    return error(h, Status::kInvalidArguments, fixed, true);

  const Opcode sent = static_cast<Opcode>(h.opcode);
  const Opcode op = binary::loud(sent);
  const Judgement judgement = judge(op, h);
  if (judgement.shape == Shape::kInvalid) return error(h, Status::kInvalidArguments, fixed, true);
  if (judgement.shape == Shape::kUnknown) {
    swallow_remaining_ = judgement.swallow;
    return error(h, Status::kUnknownCommand, fixed, false);
  }
  if (op == Opcode::kStat &&
      !binary_stats_group(stats_group(input.substr(fixed - h.key_length, h.key_length)))) {
    return error(h, Status::kKeyNotFound, fixed, false);
  }

  const std::string_view extras = input.substr(binary::kHeaderSize, h.extras_length);
  const std::string_view key = input.substr(binary::kHeaderSize + h.extras_length, h.key_length);
  command.clear();
  fill(h, extras, key, command);
  if (!is_storage(op)) return ParseResult{ParseStatus::kComplete, fixed, {}, false};

  const std::size_t value_length = h.body_length - h.extras_length - h.key_length;
  if (detail::memcached_item_size(key.size(), value_length, command.client_flags) >
      limits_.item_size_max) {
    // memcached answers at once and then drops the value (its length is an int there: a body
    // of 2 GiB or more drops nothing).
    command.too_large = true;
    swallow_remaining_ = value_length <= 0x7fffffff ? value_length : 0;
    return ParseResult{ParseStatus::kComplete, fixed, {}, false};
  }
  if (input.size() < fixed + value_length) return {};
  command.data = input.substr(fixed, value_length);
  return ParseResult{ParseStatus::kComplete, fixed + value_length, {}, false};
}

void BinaryParser::fill(const Header& h, std::string_view extras, std::string_view key,
                        Command& command) const {
  const Opcode sent = static_cast<Opcode>(h.opcode);
  const Opcode op = binary::loud(sent);
  command.binary.active = true;
  command.binary.opcode = h.opcode;
  command.binary.opaque = h.opaque;
  command.binary.quiet = op != sent;
  command.cas_unique = h.cas;
  command.key = key;
  switch (op) {
    case Opcode::kGet:
    case Opcode::kGetK:
      command.kind = CommandKind::kGets;
      command.keys.push_back(key);
      break;
    case Opcode::kTouch:
    case Opcode::kGat:
    case Opcode::kGatK:
      command.kind = CommandKind::kGats;
      command.exptime = u32(extras, 0);
      command.keys.push_back(key);
      break;
    case Opcode::kSet:
    case Opcode::kAdd:
    case Opcode::kReplace:
      // memcached turns any of the three into a cas when the header carries one.
      command.kind = op == Opcode::kSet   ? CommandKind::kSet
                     : h.cas != 0         ? CommandKind::kCas
                     : op == Opcode::kAdd ? CommandKind::kAdd
                                          : CommandKind::kReplace;
      command.client_flags = u32(extras, 0);
      command.exptime = u32(extras, 4);
      break;
    case Opcode::kAppend: command.kind = CommandKind::kAppend; break;
    case Opcode::kPrepend: command.kind = CommandKind::kPrepend; break;
    case Opcode::kDelete: command.kind = CommandKind::kDelete; break;
    case Opcode::kIncrement:
    case Opcode::kDecrement: {
      command.kind = op == Opcode::kIncrement ? CommandKind::kIncr : CommandKind::kDecr;
      command.delta = binary::load_be(extras.data(), 8);
      command.binary.initial = binary::load_be(extras.data() + 8, 8);
      const std::uint32_t expiration = u32(extras, 16);
      command.binary.create = expiration != 0xffffffffu;
      command.exptime = expiration;
      break;
    }
    case Opcode::kFlush:
      command.kind = CommandKind::kFlushAll;
      command.delay = extras.size() == 4 ? u32(extras, 0) : 0;
      break;
    case Opcode::kStat:
      command.kind = CommandKind::kStats;
      command.stats_group = stats_group(key);
      break;
    case Opcode::kQuit: command.kind = CommandKind::kQuit; break;
    case Opcode::kNoop: command.kind = CommandKind::kNoop; break;
    case Opcode::kVersion: command.kind = CommandKind::kVersion; break;
    default: break;  // judge() let no other opcode through
  }
}

}  // namespace pmcached::protocol

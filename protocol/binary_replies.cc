#include "protocol/binary_replies.h"

namespace pmcached::protocol {

using binary::Opcode;
using binary::Status;

BinaryReplies::BinaryReplies(std::string& out, const Command& command)
    : BinaryReplies(out, command.binary) {
  stats_group_ = command.stats_group;
}

BinaryReplies::BinaryReplies(std::string& out, const BinaryFrame& frame)
    : writer_(out), frame_(frame), op_(binary::loud(static_cast<Opcode>(frame.opcode))) {}

void BinaryReplies::hit(std::string_view key, std::uint32_t flags, std::string_view value,
                        std::uint64_t cas) {
  char extras[4];
  binary::store_be(extras, flags, 4);
  const bool with_key = op_ == Opcode::kGetK || op_ == Opcode::kGatK;
  writer_.response(frame_.opcode, frame_.opaque, Status::kSuccess, cas, {extras, 4},
                   with_key ? key : std::string_view{},
                   op_ == Opcode::kTouch ? std::string_view{} : value);
}

void BinaryReplies::miss(std::string_view key) {
  if (frame_.quiet) return;
  if (op_ == Opcode::kGetK || op_ == Opcode::kGatK) {
    // memcached's miss of a GETK/GATK carries the key and no text.
    writer_.response(frame_.opcode, frame_.opaque, Status::kKeyNotFound, 0, {}, key, {});
    return;
  }
  error(Status::kKeyNotFound);
}

void BinaryReplies::outcome(Outcome outcome, std::uint64_t cas) {
  switch (outcome) {
    case Outcome::kStored:
    case Outcome::kDeleted:
    case Outcome::kTouched:
      if (!frame_.quiet) writer_.success(frame_.opcode, frame_.opaque, cas);
      return;
    case Outcome::kExists: error(Status::kKeyExists); return;
    case Outcome::kNotFound: error(Status::kKeyNotFound); return;
    case Outcome::kNotStored:
      // complete_update_bin: an add that finds the key, a replace that does not.
      if (op_ == Opcode::kAdd) return error(Status::kKeyExists);
      if (op_ == Opcode::kReplace) return error(Status::kKeyNotFound);
      return error(Status::kNotStored);
    case Outcome::kNonNumeric: error(Status::kDeltaBadValue); return;
    case Outcome::kTooLarge: error(Status::kTooLarge); return;
    case Outcome::kOutOfMemory: {
      // memcached's out_of_memory() text without its "SERVER_ERROR " prefix.
      const bool arithmetic = op_ == Opcode::kIncrement || op_ == Opcode::kDecrement;
      writer_.error(
          frame_.opcode, frame_.opaque, Status::kOutOfMemory,
          arithmetic ? "Out of memory incrementing value" : "Out of memory allocating item");
      return;
    }
  }
}

void BinaryReplies::number(std::uint64_t value, std::uint64_t cas) {
  if (frame_.quiet) return;
  char body[8];
  binary::store_be(body, value, 8);
  writer_.response(frame_.opcode, frame_.opaque, Status::kSuccess, cas, {}, {}, {body, 8});
}

void BinaryReplies::ok() {
  if (!frame_.quiet) writer_.success(frame_.opcode, frame_.opaque);
}

void BinaryReplies::version(std::string_view text) {
  writer_.response(frame_.opcode, frame_.opaque, Status::kSuccess, 0, {}, {}, text);
}

void BinaryReplies::stats(std::string_view text) {
  if (text.starts_with("ERROR") || text.starts_with("CLIENT_ERROR") ||
      text.starts_with("SERVER_ERROR")) {
    error(Status::kKeyNotFound);
    return;
  }
  if (stats_group_ == "detail dump") {
    writer_.response(frame_.opcode, frame_.opaque, Status::kSuccess, 0, {}, "detailed", text);
  } else {
    constexpr std::string_view kStat = "STAT ";
    while (!text.empty()) {
      const std::size_t eol = text.find("\r\n");
      const std::string_view line = text.substr(0, eol);
      text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 2);
      if (!line.starts_with(kStat)) continue;  // END, RESET: the empty frame below ends it
      const std::string_view stat = line.substr(kStat.size());
      const std::size_t space = stat.find(' ');
      const std::string_view name = stat.substr(0, space);
      const std::string_view value =
          space == std::string_view::npos ? std::string_view{} : stat.substr(space + 1);
      writer_.response(frame_.opcode, frame_.opaque, Status::kSuccess, 0, {}, name, value);
    }
  }
  writer_.success(frame_.opcode, frame_.opaque);
}

}  // namespace pmcached::protocol

// BinaryReplies: the classic commands' replies as binary-protocol frames (classic_replies.h),
// as memcached 1.6.18's proto_bin.c writes them.
//
// Every reply echoes the request's opcode and opaque. A quiet opcode silences its success
// replies and, for GETQ/GETKQ/GATQ/GATKQ, a miss; errors are always sent. Hits carry the
// 4-byte flags as extras and the item's cas; GETK/GATK add the key, TOUCH leaves out the value.
// A stored item's cas is returned by set/add/replace/append/prepend and incr/decr.
//
// Thread safety: wraps one connection's output buffer; not shared.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/binary_protocol.h"
#include "protocol/binary_writer.h"
#include "protocol/classic_replies.h"
#include "protocol/command.h"

namespace pmcached::protocol {

class BinaryReplies final : public ClassicReplies {
 public:
  // `command` is a binary request (command.binary.active).
  BinaryReplies(std::string& out, const Command& command);
  // For replies that read nothing else of the request (all but stats()).
  BinaryReplies(std::string& out, const BinaryFrame& frame);

  void hit(std::string_view key, std::uint32_t flags, std::string_view value,
           std::uint64_t cas) override;
  void miss(std::string_view key) override;
  void end() override {}
  void outcome(Outcome outcome, std::uint64_t cas) override;
  void number(std::uint64_t value, std::uint64_t cas) override;
  void ok() override;
  void version(std::string_view text) override;
  // One frame per "STAT <name> <value>" line, then an empty frame that ends the list; an
  // ERROR or CLIENT_ERROR reply becomes "Not found"; `stats detail dump`'s text is one value
  // named "detailed", as memcached sends it.
  void stats(std::string_view text) override;
  void quit() override { ok(); }

 private:
  void error(binary::Status status) { writer_.error(frame_.opcode, frame_.opaque, status); }

  BinaryWriter writer_;
  const BinaryFrame& frame_;
  const binary::Opcode op_;  // the opcode, quiet variants mapped to their loud twin
  std::string_view stats_group_;
};

}  // namespace pmcached::protocol

// ClassicReplies: the replies of the classic commands (get/gets/gat/gats, the storage commands,
// delete, incr/decr, touch, flush_all, version, verbosity, stats, quit) in one wire format.
//
// The executor reports each neutral result once; TextReplies writes memcached's text
// (through ReplyWriter), BinaryReplies (binary_replies.h) binary frames. Each format decides
// which replies it silences: text `noreply` silences every reply of these commands, a binary
// quiet opcode only its successes and get misses.
//
// Thread safety: wraps one connection's output buffer; not shared.
#pragma once

#include <cstdint>
#include <string_view>

#include "protocol/command.h"
#include "protocol/reply_writer.h"

namespace pmcached::protocol {

class ClassicReplies {
 public:
  virtual ~ClassicReplies() = default;

  // A retrieval: hit() or miss() for each key, then end().
  virtual void hit(std::string_view key, std::uint32_t flags, std::string_view value,
                   std::uint64_t cas) = 0;
  virtual void miss(std::string_view key) = 0;
  virtual void end() = 0;
  // A storage, delete, touch or arithmetic outcome; `cas` is the stored item's.
  virtual void outcome(Outcome outcome, std::uint64_t cas) = 0;
  // incr/decr's new value.
  virtual void number(std::uint64_t value, std::uint64_t cas) = 0;
  // flush_all, verbosity, NOOP.
  virtual void ok() = 0;
  virtual void version(std::string_view text) = 0;
  // The reply of `stats <group>` as the stats producer wrote it, in memcached's text format.
  virtual void stats(std::string_view text) = 0;
  // Before the connection closes on quit.
  virtual void quit() = 0;
};

// memcached's text replies for `command` (its noreply, gets vs get, a key over the limit).
class TextReplies final : public ClassicReplies {
 public:
  TextReplies(ReplyWriter& writer, const Command& command) : writer_(writer), command_(command) {}

  void hit(std::string_view key, std::uint32_t flags, std::string_view value,
           std::uint64_t cas) override;
  void miss(std::string_view) override {}
  void end() override;
  void outcome(Outcome outcome, std::uint64_t cas) override;
  void number(std::uint64_t value, std::uint64_t cas) override;
  void ok() override;
  void version(std::string_view text) override { writer_.version(text); }
  void stats(std::string_view text) override { writer_.raw(text); }
  void quit() override {}

 private:
  ReplyWriter& writer_;
  const Command& command_;
};

}  // namespace pmcached::protocol

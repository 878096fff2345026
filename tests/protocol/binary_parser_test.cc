// BinaryParser byte by byte: every opcode's fields, frames split at every byte, pipelines,
// and memcached 1.6.18's answers to malformed frames (checked side by side with it).
#include "protocol/binary_parser.h"

#include <algorithm>
#include <deque>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/protocol/binary_test_util.h"

namespace pmcached::protocol::test {
namespace {

using binary::Opcode;
using binary::Status;

std::uint8_t op(Opcode o) { return static_cast<std::uint8_t>(o); }

std::string describe_binary(const Command& c) {
  std::ostringstream out;
  out << "kind=" << static_cast<int>(c.kind) << " key=" << c.key << " keys=" << c.keys.size()
      << " flags=" << c.client_flags << " exptime=" << c.exptime << " cas=" << c.cas_unique
      << " delta=" << c.delta << " delay=" << c.delay << " too_large=" << c.too_large
      << " data=" << c.data << " stats=" << c.stats_group << " op=" << int{c.binary.opcode}
      << " opaque=" << c.binary.opaque << " quiet=" << c.binary.quiet
      << " create=" << c.binary.create << " initial=" << c.binary.initial;
  return out.str();
}

// What a byte stream produced: "C <command>", "E <status> <close>", "S <bytes>", "X" (close
// without a reply), in order.
std::vector<std::string> run(std::string_view input, std::size_t split_at = 0,
                             ParserLimits limits = {}) {
  std::vector<std::string> events;
  BinaryParser parser(limits);
  Command command;
  std::string buffer;
  std::size_t skipped = 0;
  const auto flush_skipped = [&] {
    if (skipped != 0) events.push_back("S " + std::to_string(skipped));
    skipped = 0;
  };
  const std::vector<std::string_view> reads =
      split_at == 0
          ? std::vector<std::string_view>{input}
          : std::vector<std::string_view>{input.substr(0, split_at), input.substr(split_at)};
  for (std::string_view read : reads) {
    buffer.append(read);
    for (;;) {
      const ParseResult r = parser.parse(buffer, command);
      if (r.status == ParseStatus::kNeedMore) {
        EXPECT_EQ(r.consumed, 0u);
        break;
      }
      EXPECT_GT(r.consumed, 0u);
      if (r.status == ParseStatus::kSkipped) {
        skipped += r.consumed;
      } else {
        flush_skipped();
      }
      if (r.status == ParseStatus::kComplete) events.push_back("C " + describe_binary(command));
      if (r.status == ParseStatus::kError) {
        if (r.error_reply.empty()) {
          events.push_back("X");
        } else {
          const std::vector<Response> frames = responses(r.error_reply);
          EXPECT_EQ(frames.size(), 1u);
          events.push_back("E " + std::to_string(frames.at(0).status) + " " + frames.at(0).value +
                           (r.close_connection ? " close" : ""));
        }
      }
      buffer.erase(0, r.consumed);
      if (r.close_connection) return events;
    }
  }
  flush_skipped();
  return events;
}

// The Command's views point into its input, which is kept until the test program ends.
Command parse_whole(const std::string& frame_bytes) {
  static std::deque<std::string> inputs;
  const std::string& input = inputs.emplace_back(frame_bytes);
  BinaryParser parser;
  Command command;
  const ParseResult r = parser.parse(input, command);
  EXPECT_EQ(r.status, ParseStatus::kComplete);
  EXPECT_EQ(r.consumed, input.size());
  return command;
}

std::string set_extras(std::uint32_t flags, std::uint32_t exptime) {
  return be32(flags) + be32(exptime);
}

std::string incr_extras(std::uint64_t delta, std::uint64_t initial, std::uint32_t exptime) {
  return be64(delta) + be64(initial) + be32(exptime);
}

TEST(BinaryParserTest, GetFamilyBecomesGetsWithTheEnvelope) {
  for (Opcode o : {Opcode::kGet, Opcode::kGetQ, Opcode::kGetK, Opcode::kGetKQ}) {
    const Command c = parse_whole(frame({.opcode = op(o), .key = "foo", .opaque = 0xdeadbeef}));
    EXPECT_EQ(c.kind, CommandKind::kGets);
    EXPECT_EQ(c.key, "foo");
    ASSERT_EQ(c.keys.size(), 1u);
    EXPECT_EQ(c.keys[0], "foo");
    EXPECT_TRUE(c.binary.active);
    EXPECT_EQ(c.binary.opcode, op(o));
    EXPECT_EQ(c.binary.opaque, 0xdeadbeefu);
    EXPECT_EQ(c.binary.quiet, o == Opcode::kGetQ || o == Opcode::kGetKQ);
  }
}

TEST(BinaryParserTest, TouchAndGatFamilyBecomeGatsWithTheExpiration) {
  for (Opcode o : {Opcode::kTouch, Opcode::kGat, Opcode::kGatQ, Opcode::kGatK, Opcode::kGatKQ}) {
    const Command c = parse_whole(frame({.opcode = op(o), .extras = be32(300), .key = "k"}));
    EXPECT_EQ(c.kind, CommandKind::kGats);
    EXPECT_EQ(c.exptime, 300);
    EXPECT_EQ(c.keys.size(), 1u);
    EXPECT_EQ(c.binary.quiet, o == Opcode::kGatQ || o == Opcode::kGatKQ);
  }
  // The expiration is unsigned in the frame, as memcached reads it.
  EXPECT_EQ(
      parse_whole(frame({.opcode = op(Opcode::kTouch), .extras = be32(0xffffffff), .key = "k"}))
          .exptime,
      0xffffffffLL);
}

TEST(BinaryParserTest, StorageOpcodesCarryFlagsExpirationValueAndCas) {
  Command c = parse_whole(frame({.opcode = op(Opcode::kSetQ),
                                 .extras = set_extras(0xcafe, 60),
                                 .key = "key",
                                 .value = "value",
                                 .cas = 77}));
  EXPECT_EQ(c.kind, CommandKind::kSet);
  EXPECT_EQ(c.client_flags, 0xcafeu);
  EXPECT_EQ(c.exptime, 60);
  EXPECT_EQ(c.data, "value");
  EXPECT_EQ(c.cas_unique, 77u);
  EXPECT_TRUE(c.binary.quiet);
  EXPECT_EQ(
      parse_whole(frame({.opcode = op(Opcode::kAdd), .extras = set_extras(0, 0), .key = "k"})).kind,
      CommandKind::kAdd);
  // memcached turns an add or replace with a cas into a cas (a set too: the store does).
  EXPECT_EQ(
      parse_whole(
          frame({.opcode = op(Opcode::kAdd), .extras = set_extras(0, 0), .key = "k", .cas = 5}))
          .kind,
      CommandKind::kCas);
  EXPECT_EQ(
      parse_whole(
          frame(
              {.opcode = op(Opcode::kReplaceQ), .extras = set_extras(0, 0), .key = "k", .cas = 5}))
          .kind,
      CommandKind::kCas);
  EXPECT_EQ(
      parse_whole(frame({.opcode = op(Opcode::kReplace), .extras = set_extras(0, 0), .key = "k"}))
          .kind,
      CommandKind::kReplace);
  c = parse_whole(frame({.opcode = op(Opcode::kAppendQ), .key = "k", .value = "tail", .cas = 9}));
  EXPECT_EQ(c.kind, CommandKind::kAppend);
  EXPECT_EQ(c.data, "tail");
  EXPECT_EQ(c.cas_unique, 9u);
  EXPECT_EQ(parse_whole(frame({.opcode = op(Opcode::kPrepend), .key = "k", .value = "x"})).kind,
            CommandKind::kPrepend);
  // An empty value is a value.
  EXPECT_EQ(
      parse_whole(frame({.opcode = op(Opcode::kSet), .extras = set_extras(0, 0), .key = "k"})).data,
      "");
}

TEST(BinaryParserTest, ArithmeticCarriesDeltaInitialAndWhetherToCreate) {
  Command c = parse_whole(frame({.opcode = op(Opcode::kIncrement),
                                 .extras = incr_extras(5, 100, 3600),
                                 .key = "n",
                                 .cas = 3}));
  EXPECT_EQ(c.kind, CommandKind::kIncr);
  EXPECT_EQ(c.delta, 5u);
  EXPECT_EQ(c.binary.initial, 100u);
  EXPECT_TRUE(c.binary.create);
  EXPECT_EQ(c.exptime, 3600);
  EXPECT_EQ(c.cas_unique, 3u);
  c = parse_whole(frame({.opcode = op(Opcode::kDecrementQ),
                         .extras = incr_extras(~0ull, 0, 0xffffffff),
                         .key = "n"}));
  EXPECT_EQ(c.kind, CommandKind::kDecr);
  EXPECT_EQ(c.delta, ~0ull);
  EXPECT_FALSE(c.binary.create) << "expiration 0xffffffff: do not create";
  EXPECT_TRUE(c.binary.quiet);
}

TEST(BinaryParserTest, OtherOpcodes) {
  Command c = parse_whole(frame({.opcode = op(Opcode::kDeleteQ), .key = "gone", .cas = 4}));
  EXPECT_EQ(c.kind, CommandKind::kDelete);
  EXPECT_EQ(c.cas_unique, 4u);
  EXPECT_TRUE(c.binary.quiet);
  EXPECT_EQ(parse_whole(frame({.opcode = op(Opcode::kFlush)})).delay, 0);
  c = parse_whole(frame({.opcode = op(Opcode::kFlushQ), .extras = be32(30)}));
  EXPECT_EQ(c.kind, CommandKind::kFlushAll);
  EXPECT_EQ(c.delay, 30);
  EXPECT_EQ(parse_whole(frame({.opcode = op(Opcode::kNoop)})).kind, CommandKind::kNoop);
  EXPECT_EQ(parse_whole(frame({.opcode = op(Opcode::kVersion)})).kind, CommandKind::kVersion);
  c = parse_whole(frame({.opcode = op(Opcode::kQuitQ)}));
  EXPECT_EQ(c.kind, CommandKind::kQuit);
  EXPECT_TRUE(c.binary.quiet);
  EXPECT_EQ(parse_whole(frame({.opcode = op(Opcode::kQuit)})).binary.quiet, false);
}

TEST(BinaryParserTest, StatKeysNameGroupsAsMemcachedMatchesThem) {
  const auto group = [](std::string key) {
    return std::string(parse_whole(frame({.opcode = op(Opcode::kStat), .key = key})).stats_group);
  };
  EXPECT_EQ(group(""), "");
  EXPECT_EQ(group("items"), "items");
  EXPECT_EQ(group("slabs"), "slabs");
  EXPECT_EQ(group("settingsXYZ"), "settings") << "a prefix match in memcached";
  EXPECT_EQ(group("resetting"), "reset");
  EXPECT_EQ(group("detail dump"), "detail dump");
  // Groups memcached's binary STAT does not serve are "Not found" and the connection goes on.
  EXPECT_EQ(run(frame({.opcode = op(Opcode::kStat), .key = "conns"})),
            (std::vector<std::string>{"E 1 Not found"}));
  EXPECT_EQ(run(frame({.opcode = op(Opcode::kStat), .key = "detail"})),
            (std::vector<std::string>{"E 1 Not found"}));
}

TEST(BinaryParserTest, BadMagicClosesWithoutAReply) {
  EXPECT_EQ(run(frame({.opcode = op(Opcode::kNoop), .magic = 0x81})),
            (std::vector<std::string>{"X"}));
  // Judged on the header alone.
  EXPECT_EQ(run(frame({.opcode = op(Opcode::kGet), .key = "abc", .magic = 0x00}).substr(0, 24)),
            (std::vector<std::string>{"X"}));
}

TEST(BinaryParserTest, KeyOrExtrasLongerThanTheBodyIsUnknownCommandAndClose) {
  EXPECT_EQ(run(frame({.opcode = op(Opcode::kGet), .key = "abc", .body_length = 2})),
            (std::vector<std::string>{"E 129 Unknown command close"}));
  EXPECT_EQ(
      run(frame(
          {.opcode = op(Opcode::kSet), .extras = set_extras(0, 0), .key = "k", .body_length = 8})),
      (std::vector<std::string>{"E 129 Unknown command close"}));
}

TEST(BinaryParserTest, LengthsAnOpcodeDoesNotAllowAreInvalidArgumentsAndClose) {
  const std::vector<std::string> invalid = {"E 4 Invalid arguments close"};
  const std::vector<std::string> frames = {
      frame({.opcode = op(Opcode::kGet)}),                                 // no key
      frame({.opcode = op(Opcode::kGet), .extras = be32(1), .key = "k"}),  // extras
      frame({.opcode = op(Opcode::kGetQ), .key = "k", .value = "v"}),      // a value
      frame({.opcode = op(Opcode::kSet), .key = "k", .value = "v"}),       // no extras
      frame({.opcode = op(Opcode::kAdd), .extras = set_extras(0, 0)}),     // no key
      frame({.opcode = op(Opcode::kDelete), .extras = be32(0), .key = "k"}),
      frame({.opcode = op(Opcode::kIncrement), .extras = be64(1), .key = "k"}),
      frame({.opcode = op(Opcode::kAppend), .extras = be32(0), .key = "k", .value = "v"}),
      frame({.opcode = op(Opcode::kFlush), .extras = be64(1)}),
      frame({.opcode = op(Opcode::kFlush), .key = "k"}),
      frame({.opcode = op(Opcode::kNoop), .key = "k"}),
      frame({.opcode = op(Opcode::kVersion), .value = "v"}),
      frame({.opcode = op(Opcode::kQuitQ), .extras = be32(0)}),
      frame({.opcode = op(Opcode::kStat), .extras = be32(0)}),
      frame({.opcode = op(Opcode::kTouch), .key = "k"}),
      frame({.opcode = op(Opcode::kGatK), .extras = be32(0)}),
      frame({.opcode = op(Opcode::kGet), .key = std::string(251, 'k')}),  // key over 250
  };
  for (const std::string& f : frames) {
    EXPECT_EQ(run(f + frame({.opcode = op(Opcode::kNoop)})), invalid)
        << "opcode " << int{static_cast<unsigned char>(f[1])};
  }
  EXPECT_EQ(run(frame({.opcode = op(Opcode::kGet), .key = std::string(250, 'k')})).size(), 1u);
}

TEST(BinaryParserTest, UnknownOpcodesAnswerAndGoOnLikeMemcached) {
  const std::string noop = frame({.opcode = op(Opcode::kNoop)});
  const std::string noop_event = run(noop).at(0);
  // VERBOSITY is not served by memcached 1.6.18 either.
  EXPECT_EQ(run(frame({.opcode = op(Opcode::kVerbosity)}) + noop),
            (std::vector<std::string>{"E 129 Unknown command", noop_event}));
  EXPECT_EQ(run(frame({.opcode = 0x50}) + noop),
            (std::vector<std::string>{"E 129 Unknown command", noop_event}));
  // memcached drops `body length` bytes counted after the key: here the next frame's first 3.
  EXPECT_EQ(run(frame({.opcode = 0x50, .key = "abc"}) + noop + noop),
            (std::vector<std::string>{"E 129 Unknown command", "S 3", "X"}));
}

TEST(BinaryParserTest, SaslIsUnknownCommandAndItsDataIsDropped) {
  const std::string noop = frame({.opcode = op(Opcode::kNoop)});
  const std::string noop_event = run(noop).at(0);
  EXPECT_EQ(run(frame({.opcode = op(Opcode::kSaslListMechs)}) + noop),
            (std::vector<std::string>{"E 129 Unknown command", noop_event}));
  EXPECT_EQ(run(frame({.opcode = op(Opcode::kSaslAuth),
                       .key = "PLAIN",
                       .value = std::string("\0u\0p", 4)}) +
                noop),
            (std::vector<std::string>{"E 129 Unknown command", "S 4", noop_event}));
  EXPECT_EQ(run(frame({.opcode = op(Opcode::kSaslStep), .key = "PLAIN", .value = "abcd"}) + noop),
            (std::vector<std::string>{"E 129 Unknown command", "S 4", noop_event}));
  EXPECT_EQ(run(frame({.opcode = op(Opcode::kSaslAuth)})),
            (std::vector<std::string>{"E 4 Invalid arguments close"}));
}

TEST(BinaryParserTest, TooLargeValueIsAnsweredAtOnceAndDropped) {
  ParserLimits limits;
  limits.item_size_max = 1024;
  const std::string noop = frame({.opcode = op(Opcode::kNoop)});
  const std::string big(2000, 'v');
  const std::vector<std::string> events = run(
      frame({.opcode = op(Opcode::kSetQ), .extras = set_extras(0, 0), .key = "k", .value = big}) +
          noop,
      0, limits);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_NE(events[0].find("too_large=1"), std::string::npos) << events[0];
  EXPECT_NE(events[0].find("key=k "), std::string::npos) << events[0];
  EXPECT_EQ(events[1], "S 2000");
  EXPECT_EQ(events[2], run(noop).at(0));
  // The value need not be buffered: the answer comes from the header, extras and key.
  const std::string head =
      frame({.opcode = op(Opcode::kAppend), .key = "k", .body_length = 1 + 4000000}).substr(0, 25);
  EXPECT_EQ(run(head, 0, limits).size(), 1u);
  // A value that fits is read whole.
  const std::string fits(900, 'v');
  EXPECT_NE(
      run(frame(
              {.opcode = op(Opcode::kSet), .extras = set_extras(0, 0), .key = "k", .value = fits}),
          0, limits)
          .at(0)
          .find("too_large=0"),
      std::string::npos);
}

// Every opcode, pipelined; parsing the same bytes split into two reads at every offset gives
// the same events.
TEST(BinaryParserTest, PipelineSplitAtEveryByteParsesTheSame) {
  std::string input;
  input += frame({.opcode = op(Opcode::kSet),
                  .extras = set_extras(1, 2),
                  .key = "a",
                  .value = "v1",
                  .opaque = 1});
  input += frame({.opcode = op(Opcode::kSetQ),
                  .extras = set_extras(0, 0),
                  .key = "b",
                  .value = "",
                  .opaque = 2,
                  .cas = 5});
  input +=
      frame({.opcode = op(Opcode::kAdd), .extras = set_extras(0, 0), .key = "c", .value = "x"});
  input +=
      frame({.opcode = op(Opcode::kAddQ), .extras = set_extras(0, 0), .key = "c", .value = "x"});
  input +=
      frame({.opcode = op(Opcode::kReplace), .extras = set_extras(0, 0), .key = "c", .value = "y"});
  input += frame(
      {.opcode = op(Opcode::kReplaceQ), .extras = set_extras(0, 0), .key = "c", .value = "y"});
  input += frame({.opcode = op(Opcode::kAppend), .key = "c", .value = "tail"});
  input += frame({.opcode = op(Opcode::kAppendQ), .key = "c", .value = "tail"});
  input += frame({.opcode = op(Opcode::kPrepend), .key = "c", .value = "head"});
  input += frame({.opcode = op(Opcode::kPrependQ), .key = "c", .value = "head"});
  for (Opcode o : {Opcode::kGet, Opcode::kGetQ, Opcode::kGetK, Opcode::kGetKQ, Opcode::kDelete,
                   Opcode::kDeleteQ}) {
    input += frame({.opcode = op(o), .key = "a", .opaque = 7});
  }
  for (Opcode o :
       {Opcode::kIncrement, Opcode::kIncrementQ, Opcode::kDecrement, Opcode::kDecrementQ}) {
    input += frame({.opcode = op(o), .extras = incr_extras(2, 3, 4), .key = "n"});
  }
  for (Opcode o : {Opcode::kTouch, Opcode::kGat, Opcode::kGatQ, Opcode::kGatK, Opcode::kGatKQ}) {
    input += frame({.opcode = op(o), .extras = be32(9), .key = "a"});
  }
  input += frame({.opcode = op(Opcode::kFlush), .extras = be32(1)});
  input += frame({.opcode = op(Opcode::kFlushQ)});
  input += frame({.opcode = op(Opcode::kStat), .key = "items"});
  input += frame({.opcode = op(Opcode::kStat)});
  input += frame({.opcode = op(Opcode::kVersion)});
  input += frame({.opcode = op(Opcode::kNoop)});
  input += frame({.opcode = op(Opcode::kVerbosity)});  // with a body it would eat the next frame
  input += frame({.opcode = op(Opcode::kSaslListMechs)});
  input += frame({.opcode = op(Opcode::kQuitQ)});
  input += frame({.opcode = op(Opcode::kQuit)});
  const std::vector<std::string> whole = run(input);
  ASSERT_EQ(whole.size(), 35u);
  EXPECT_EQ(std::count_if(whole.begin(), whole.end(),
                          [](const std::string& e) { return e.starts_with("C "); }),
            33);
  for (std::size_t split = 1; split < input.size(); ++split) {
    ASSERT_EQ(run(input, split), whole) << "split at " << split;
  }
}

}  // namespace
}  // namespace pmcached::protocol::test

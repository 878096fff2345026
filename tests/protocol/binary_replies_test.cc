// BinaryReplies: the frames memcached 1.6.18 sends for each classic outcome (checked side by
// side with it), and TextReplies' noreply.
#include "protocol/binary_replies.h"

#include <string>

#include <gtest/gtest.h>

#include "protocol/binary_parser.h"
#include "tests/protocol/binary_test_util.h"

namespace pmcached::protocol::test {
namespace {

using binary::Opcode;
using binary::Status;

Command request(Opcode o, std::string_view stats_group = {}) {
  Command c;
  c.binary.active = true;
  c.binary.opcode = static_cast<std::uint8_t>(o);
  c.binary.opaque = 0x01020304;
  c.binary.quiet = binary::loud(o) != o;
  c.stats_group = stats_group;
  return c;
}

template <typename Write>
std::vector<Response> replies_of(Opcode o, Write write, std::string_view group = {}) {
  std::string out;
  const Command c = request(o, group);
  BinaryReplies replies(out, c);
  write(replies);
  std::string rest;
  std::vector<Response> frames = responses(out, &rest);
  EXPECT_TRUE(rest.empty());
  for (const Response& r : frames) {
    EXPECT_EQ(r.magic, binary::kResponseMagic);
    EXPECT_EQ(r.opcode, static_cast<std::uint8_t>(o));
    EXPECT_EQ(r.opaque, 0x01020304u);
    EXPECT_EQ(r.data_type, 0);
  }
  return frames;
}

TEST(BinaryRepliesTest, HitsCarryFlagsCasAndForGetkTheKey) {
  const auto hit = [](BinaryReplies& r) { r.hit("key", 0xabcd, "value", 42); };
  std::vector<Response> f = replies_of(Opcode::kGet, hit);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].status, 0);
  EXPECT_EQ(f[0].cas, 42u);
  EXPECT_EQ(f[0].extras, be32(0xabcd));
  EXPECT_EQ(f[0].key, "");
  EXPECT_EQ(f[0].value, "value");
  f = replies_of(Opcode::kGetKQ, hit);  // a quiet get still sends its hit
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].key, "key");
  EXPECT_EQ(f[0].value, "value");
  f = replies_of(Opcode::kGatK, hit);
  EXPECT_EQ(f.at(0).key, "key");
  f = replies_of(Opcode::kTouch, hit);  // touch: flags and cas, no value
  EXPECT_EQ(f.at(0).extras, be32(0xabcd));
  EXPECT_EQ(f.at(0).value, "");
  EXPECT_EQ(f.at(0).cas, 42u);
}

TEST(BinaryRepliesTest, MissesAreNotFoundOrTheKeyAndSilentWhenQuiet) {
  const auto miss = [](BinaryReplies& r) {
    r.miss("key");
    r.end();
  };
  std::vector<Response> f = replies_of(Opcode::kGet, miss);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].status, 1);
  EXPECT_EQ(f[0].value, "Not found");
  f = replies_of(Opcode::kGetK, miss);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].status, 1);
  EXPECT_EQ(f[0].key, "key");
  EXPECT_EQ(f[0].value, "");
  EXPECT_EQ(replies_of(Opcode::kTouch, miss).at(0).value, "Not found");
  for (Opcode o : {Opcode::kGetQ, Opcode::kGetKQ, Opcode::kGatQ, Opcode::kGatKQ}) {
    EXPECT_TRUE(replies_of(o, miss).empty());
  }
}

TEST(BinaryRepliesTest, OutcomesMapToMemcachedStatusesAndQuietSilencesOnlySuccess) {
  const auto outcome = [](Outcome o, std::uint64_t cas = 0) {
    return [=](BinaryReplies& r) { r.outcome(o, cas); };
  };
  std::vector<Response> f = replies_of(Opcode::kSet, outcome(Outcome::kStored, 9));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].status, 0);
  EXPECT_EQ(f[0].cas, 9u);
  EXPECT_EQ(f[0].value, "");
  EXPECT_TRUE(replies_of(Opcode::kSetQ, outcome(Outcome::kStored, 9)).empty());
  EXPECT_TRUE(replies_of(Opcode::kDeleteQ, outcome(Outcome::kDeleted)).empty());
  struct StatusCase {
    Opcode opcode;
    Outcome outcome;
    Status status;
    std::string text;
  };
  const StatusCase cases[] = {
      {Opcode::kSetQ, Outcome::kExists, Status::kKeyExists, "Data exists for key."},
      {Opcode::kAddQ, Outcome::kNotStored, Status::kKeyExists, "Data exists for key."},
      {Opcode::kReplaceQ, Outcome::kNotStored, Status::kKeyNotFound, "Not found"},
      {Opcode::kAppend, Outcome::kNotStored, Status::kNotStored, "Not stored."},
      {Opcode::kSet, Outcome::kNotFound, Status::kKeyNotFound, "Not found"},
      {Opcode::kDelete, Outcome::kExists, Status::kKeyExists, "Data exists for key."},
      {Opcode::kIncrementQ, Outcome::kNonNumeric, Status::kDeltaBadValue,
       "Non-numeric server-side value for incr or decr"},
      {Opcode::kSetQ, Outcome::kTooLarge, Status::kTooLarge, "Too large."},
      {Opcode::kSet, Outcome::kOutOfMemory, Status::kOutOfMemory, "Out of memory allocating item"},
      {Opcode::kDecrement, Outcome::kOutOfMemory, Status::kOutOfMemory,
       "Out of memory incrementing value"},
  };
  for (const StatusCase& c : cases) {
    f = replies_of(c.opcode, outcome(c.outcome, 5));
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].status, static_cast<std::uint16_t>(c.status)) << c.text;
    EXPECT_EQ(f[0].value, c.text);
    EXPECT_EQ(f[0].cas, 0u) << "errors carry no cas";
  }
}

TEST(BinaryRepliesTest, NumbersOkVersionAndQuit) {
  std::vector<Response> f =
      replies_of(Opcode::kIncrement, [](BinaryReplies& r) { r.number(0x0102030405060708, 7); });
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].value, be64(0x0102030405060708));
  EXPECT_EQ(f[0].cas, 7u);
  EXPECT_TRUE(replies_of(Opcode::kDecrementQ, [](BinaryReplies& r) { r.number(1, 1); }).empty());
  EXPECT_EQ(replies_of(Opcode::kFlush, [](BinaryReplies& r) { r.ok(); }).size(), 1u);
  EXPECT_TRUE(replies_of(Opcode::kFlushQ, [](BinaryReplies& r) { r.ok(); }).empty());
  EXPECT_EQ(replies_of(Opcode::kNoop, [](BinaryReplies& r) { r.ok(); }).size(), 1u);
  EXPECT_EQ(replies_of(Opcode::kQuit, [](BinaryReplies& r) { r.quit(); }).size(), 1u);
  EXPECT_TRUE(replies_of(Opcode::kQuitQ, [](BinaryReplies& r) { r.quit(); }).empty());
  EXPECT_EQ(replies_of(Opcode::kVersion, [](BinaryReplies& r) { r.version("1.6.18"); }).at(0).value,
            "1.6.18");
}

TEST(BinaryRepliesTest, StatsTextBecomesOneFrameEachAndAnEmptyEnd) {
  std::vector<Response> f = replies_of(Opcode::kStat, [](BinaryReplies& r) {
    r.stats("STAT pid 12\r\nSTAT pool none (volatile engine)\r\nEND\r\n");
  });
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].key, "pid");
  EXPECT_EQ(f[0].value, "12");
  EXPECT_EQ(f[1].key, "pool");
  EXPECT_EQ(f[1].value, "none (volatile engine)");
  EXPECT_EQ(f[2].key, "");
  EXPECT_EQ(f[2].value, "");
  EXPECT_EQ(f[2].status, 0);
  f = replies_of(Opcode::kStat, [](BinaryReplies& r) { r.stats("RESET\r\n"); });
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].key, "");
  f = replies_of(Opcode::kStat, [](BinaryReplies& r) { r.stats("ERROR\r\n"); });
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].status, 1);
  EXPECT_EQ(f[0].value, "Not found");
  f = replies_of(
      Opcode::kStat, [](BinaryReplies& r) { r.stats("PREFIX a get 1\r\nEND\r\n"); }, "detail dump");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].key, "detailed");
  EXPECT_EQ(f[0].value, "PREFIX a get 1\r\nEND\r\n");
}

TEST(TextRepliesTest, NoreplySilencesEveryReplyOfAClassicCommand) {
  std::string out;
  ReplyWriter writer(out);
  Command c;
  c.kind = CommandKind::kSet;
  c.noreply = true;
  TextReplies replies(writer, c);
  replies.outcome(Outcome::kTooLarge, 0);
  replies.number(5, 0);
  replies.ok();
  EXPECT_EQ(out, "");
  c.noreply = false;
  replies.outcome(Outcome::kStored, 3);
  EXPECT_EQ(out, "STORED\r\n");
}

}  // namespace
}  // namespace pmcached::protocol::test

// The classic text commands: every command and the fields it fills.
#include <string>

#include <gtest/gtest.h>

#include "tests/protocol/parser_test_util.h"

namespace pmcached::protocol::test {
namespace {

TEST(ClassicParse, GetOneKey) {
  Command c;
  expect_complete("get foo\r\n", c);
  EXPECT_EQ(c.kind, CommandKind::kGet);
  ASSERT_EQ(c.keys.size(), 1u);
  EXPECT_EQ(c.keys[0], "foo");
}

TEST(ClassicParse, GetManyKeysBeyondMemcachedsTokenLimit) {
  std::string line = "get";
  for (int i = 0; i < 100; ++i) line += " k" + std::to_string(i);
  line += "\r\n";
  Command c;
  expect_complete(line, c);
  ASSERT_EQ(c.keys.size(), 100u);
  EXPECT_EQ(c.keys[0], "k0");
  EXPECT_EQ(c.keys[99], "k99");
}

TEST(ClassicParse, GetsAndBareNewlineAndExtraSpaces) {
  Command c;
  expect_complete("  gets  a   b \n", c);
  EXPECT_EQ(c.kind, CommandKind::kGets);
  ASSERT_EQ(c.keys.size(), 2u);
  EXPECT_EQ(c.keys[0], "a");
  EXPECT_EQ(c.keys[1], "b");
}

TEST(ClassicParse, BgetIsGet) {
  Command c;
  expect_complete("bget a\r\n", c);
  EXPECT_EQ(c.kind, CommandKind::kGet);
  EXPECT_EQ(c.keys.size(), 1u);
}

TEST(ClassicParse, GatAndGats) {
  Command c;
  expect_complete("gat 100 a b\r\n", c);
  EXPECT_EQ(c.kind, CommandKind::kGat);
  EXPECT_EQ(c.exptime, 100);
  EXPECT_EQ(c.keys.size(), 2u);
  expect_complete("gats -5 a\r\n", c);
  EXPECT_EQ(c.kind, CommandKind::kGats);
  EXPECT_EQ(c.exptime, -5);
  EXPECT_EQ(c.keys.size(), 1u);
}

TEST(ClassicParse, GatWithoutKeysIsValid) {  // memcached answers END
  Command c;
  expect_complete("gat 10\r\n", c);
  EXPECT_EQ(c.kind, CommandKind::kGat);
  EXPECT_TRUE(c.keys.empty());
}

TEST(ClassicParse, SetWithData) {
  Command c;
  expect_complete("set key 42 3600 5\r\nhello\r\n", c);
  EXPECT_EQ(c.kind, CommandKind::kSet);
  EXPECT_EQ(c.key, "key");
  EXPECT_EQ(c.client_flags, 42u);
  EXPECT_EQ(c.exptime, 3600);
  EXPECT_EQ(c.data, "hello");
  EXPECT_FALSE(c.noreply);
}

TEST(ClassicParse, StorageCommandsAndNoreply) {
  const std::pair<const char*, CommandKind> kinds[] = {{"add", CommandKind::kAdd},
                                                       {"replace", CommandKind::kReplace},
                                                       {"append", CommandKind::kAppend},
                                                       {"prepend", CommandKind::kPrepend}};
  for (const auto& [name, kind] : kinds) {
    Command c;
    const std::string input = std::string(name) + " k 1 -1 2 noreply\r\nab\r\n";
    expect_complete(input, c);
    EXPECT_EQ(c.kind, kind) << name;
    EXPECT_EQ(c.exptime, -1);
    EXPECT_TRUE(c.noreply);
    EXPECT_EQ(c.data, "ab");
  }
}

TEST(ClassicParse, DataBlockMayHoldCrLfAndBinary) {
  Command c;
  const std::string input = std::string("set k 0 0 6\r\na\r\n\0b\n\r\n", 21);
  expect_complete(input, c);
  EXPECT_EQ(c.data, std::string_view("a\r\n\0b\n", 6));
}

TEST(ClassicParse, EmptyDataBlock) {
  Command c;
  expect_complete("set k 0 0 0\r\n\r\n", c);
  EXPECT_TRUE(c.data.empty());
}

TEST(ClassicParse, Cas) {
  Command c;
  expect_complete("cas k 7 0 1 18446744073709551615 noreply\r\nx\r\n", c);
  EXPECT_EQ(c.kind, CommandKind::kCas);
  EXPECT_EQ(c.cas_unique, 18446744073709551615ull);
  EXPECT_TRUE(c.noreply);
  EXPECT_EQ(c.client_flags, 7u);
}

TEST(ClassicParse, NumbersFollowMemcachedsStrtolRules) {
  Command c;
  // Flags are read as 64-bit and truncated; '+' and a tab after the digits are accepted.
  expect_complete("set k 4294967297 +7 1\r\nx\r\n", c);
  EXPECT_EQ(c.client_flags, 1u);
  EXPECT_EQ(c.exptime, 7);
  expect_complete("set k 0\t9 0 1\r\nx\r\n", c);
  EXPECT_EQ(c.client_flags, 0u);
  // A 64-bit exptime is truncated to 32 bits, as memcached does.
  expect_complete("set k 0 4294967296 1\r\nx\r\n", c);
  EXPECT_EQ(c.exptime, 0);
  // So is the data length: memcached reads 1 byte here.
  expect_complete("set k 0 0 4294967297\r\nx\r\n", c);
  EXPECT_EQ(c.data, "x");
  expect_complete("set k 18446744073709551615 0 1\r\nx\r\n", c);
  EXPECT_EQ(c.client_flags, 4294967295u);
}

TEST(ClassicParse, NoreplyOnlyAsTheLastExtraToken) {
  Command c;
  expect_complete("set k 0 0 1 norep\r\nx\r\n", c);
  EXPECT_FALSE(c.noreply);
}

TEST(ClassicParse, Delete) {
  Command c;
  expect_complete("delete k\r\n", c);
  EXPECT_EQ(c.kind, CommandKind::kDelete);
  EXPECT_EQ(c.key, "k");
  EXPECT_FALSE(c.noreply);
  expect_complete("delete k 0\r\n", c);
  EXPECT_FALSE(c.noreply);
  expect_complete("delete k noreply\r\n", c);
  EXPECT_TRUE(c.noreply);
  expect_complete("delete k 0 noreply\r\n", c);
  EXPECT_TRUE(c.noreply);
}

TEST(ClassicParse, IncrDecr) {
  Command c;
  expect_complete("incr n 18446744073709551615\r\n", c);
  EXPECT_EQ(c.kind, CommandKind::kIncr);
  EXPECT_EQ(c.delta, 18446744073709551615ull);
  expect_complete("decr n 5 noreply\r\n", c);
  EXPECT_EQ(c.kind, CommandKind::kDecr);
  EXPECT_EQ(c.key, "n");
  EXPECT_EQ(c.delta, 5u);
  EXPECT_TRUE(c.noreply);
  expect_complete("incr n -0\r\n", c);  // strtoull accepts "-0"
  EXPECT_EQ(c.delta, 0u);
}

TEST(ClassicParse, Touch) {
  Command c;
  expect_complete("touch k -1 noreply\r\n", c);
  EXPECT_EQ(c.kind, CommandKind::kTouch);
  EXPECT_EQ(c.exptime, -1);
  EXPECT_TRUE(c.noreply);
}

TEST(ClassicParse, FlushAll) {
  Command c;
  expect_complete("flush_all\r\n", c);
  EXPECT_EQ(c.kind, CommandKind::kFlushAll);
  EXPECT_EQ(c.delay, 0);
  expect_complete("flush_all 30\r\n", c);
  EXPECT_EQ(c.delay, 30);
  expect_complete("flush_all noreply\r\n", c);
  EXPECT_TRUE(c.noreply);
  EXPECT_EQ(c.delay, 0);
  expect_complete("flush_all 9 noreply\r\n", c);
  EXPECT_EQ(c.delay, 9);
  EXPECT_TRUE(c.noreply);
}

TEST(ClassicParse, Stats) {
  Command c;
  expect_complete("stats\r\n", c);
  EXPECT_EQ(c.kind, CommandKind::kStats);
  EXPECT_EQ(c.stats_group, "");
  for (const char* group : {"settings", "items", "slabs", "reset", "engine", "detail dump"}) {
    const std::string input = std::string("stats ") + group + " \r\n";
    expect_complete(input, c);
    EXPECT_EQ(c.stats_group, group);
  }
}

TEST(ClassicParse, VersionQuitVerbosityShutdown) {
  Command c;
  expect_complete("version\r\n", c);
  EXPECT_EQ(c.kind, CommandKind::kVersion);
  expect_complete("quit\r\n", c);
  EXPECT_EQ(c.kind, CommandKind::kQuit);
  expect_complete("verbosity 2 noreply\r\n", c);
  EXPECT_EQ(c.kind, CommandKind::kVerbosity);
  EXPECT_EQ(c.verbosity, 2u);
  EXPECT_TRUE(c.noreply);
  expect_complete("shutdown\r\n", c);
  EXPECT_EQ(c.kind, CommandKind::kShutdown);
  EXPECT_EQ(c.key, "");
  expect_complete("shutdown graceful\r\n", c);
  EXPECT_EQ(c.kind, CommandKind::kShutdown);
  EXPECT_EQ(c.key, "graceful");
}

TEST(ClassicParse, KeyOf250BytesIsAcceptedAnd251Refused) {
  const std::string k250(250, 'k');
  const std::string k251(251, 'k');
  Command c;
  const std::string set = "set " + k250 + " 0 0 1\r\nx\r\n";  // views point into it
  expect_complete(set, c);
  EXPECT_EQ(c.key, k250);
  const std::string get = "get " + k250 + "\r\n";
  expect_complete(get, c);
  EXPECT_EQ(c.keys.at(0), k250);
  for (const std::string& line :
       {"set " + k251 + " 0 0 1\r\n", "delete " + k251 + "\r\n", "incr " + k251 + " 1\r\n",
        "touch " + k251 + " 1\r\n", "mg " + k251 + "\r\n"}) {
    const ParseResult r = parse_one(line, c);
    EXPECT_EQ(r.status, ParseStatus::kError) << line.substr(0, 6);
    EXPECT_EQ(r.error_reply, "CLIENT_ERROR bad command line format\r\n");
    EXPECT_EQ(r.consumed, line.size()) << "the data block is not swallowed";
  }
}

// memcached looks up (and gat touches) the keys before a key that is too long, then answers
// only the error: the parser keeps those keys and marks the command.
TEST(ClassicParse, RetrievalStopsAtAKeyTooLong) {
  const std::string k251(251, 'k');
  Command c;
  const std::string get = "get a " + k251 + " b\r\n";
  expect_complete(get, c);
  EXPECT_TRUE(c.key_too_long);
  EXPECT_EQ(c.keys, (std::vector<std::string_view>{"a"}));
  const std::string gat = "gat 10 " + k251 + "\r\n";
  expect_complete(gat, c);
  EXPECT_TRUE(c.key_too_long);
  EXPECT_TRUE(c.keys.empty());
  expect_complete("get a b\r\n", c);
  EXPECT_FALSE(c.key_too_long);
}

// Odd lines memcached 1.6.18 accepts (each was checked against it): they must parse.
TEST(ClassicParse, OddLinesMemcachedAccepts) {
  for (const char* line : {"gat 99999999999 a\r\n",
                           "incr a 5\tz\r\n",
                           "incr a \t5\r\n",
                           "incr a 1 2\r\n",
                           "touch a 1 2\r\n",
                           "delete a 0\r\n",
                           "flush_all 0 0\r\n",
                           "flush_all -1\r\n",
                           "verbosity 1 2\r\n",
                           "version x\r\n",
                           "quit x\r\n",
                           "stats foo\r\n",
                           "shutdown x\r\n",
                           "set a 0 0 1 norep\r\nx\r\n",
                           "set a +5 0 1\r\nx\r\n",
                           "get a\r\r\n",
                           "me a x y\r\n",
                           "mn x y\r\n",
                           "mg a v T-1\r\n",
                           "mg a P L\r\n"}) {
    Command c;
    const ParseResult r = parse_one(line, c);
    EXPECT_EQ(r.status, ParseStatus::kComplete) << line;
    EXPECT_EQ(r.consumed, std::string_view(line).size()) << line;
  }
}

TEST(ClassicParse, KeyMayHoldControlBytes) {  // memcached splits on spaces only
  Command c;
  expect_complete("get a\tb\x01\r\n", c);
  EXPECT_EQ(c.keys.at(0), "a\tb\x01");
}

TEST(ClassicParse, ViewsPointIntoTheInput) {
  const std::string input = "set key 0 0 3\r\nabc\r\n";
  Command c;
  expect_complete(input, c);
  EXPECT_EQ(c.key.data(), input.data() + 4);
  EXPECT_EQ(c.data.data(), input.data() + 15);
}

}  // namespace
}  // namespace pmcached::protocol::test

// bench/mc_reply: the replies mc_load counts as hits, misses, stores and errors, whole and cut
// at every byte.
#include "bench/mc_reply.h"

#include <string>

#include <gtest/gtest.h>

namespace pmcached::bench {
namespace {

std::string hit_reply(const std::string& data) {
  return "VALUE mykey_rand000000000007 0 " + std::to_string(data.size()) + "\r\n" + data +
         "\r\nEND\r\n";
}

TEST(McReply, StoredIsOneLine) {
  const Reply r = parse_storage_reply("STORED\r\n");
  EXPECT_EQ(r.kind, ReplyKind::kStored);
  EXPECT_EQ(r.length, 8u);
}

TEST(McReply, AnyOtherStorageLineIsAnError) {
  const std::string line = "SERVER_ERROR out of memory storing object\r\n";
  const Reply r = parse_storage_reply(line);
  EXPECT_EQ(r.kind, ReplyKind::kError);
  EXPECT_EQ(r.length, line.size());
  EXPECT_EQ(parse_storage_reply("NOT_STORED\r\n").kind, ReplyKind::kError);
}

TEST(McReply, EndAloneIsAMiss) {
  const Reply r = parse_get_reply("END\r\n");
  EXPECT_EQ(r.kind, ReplyKind::kMiss);
  EXPECT_EQ(r.length, 5u);
}

TEST(McReply, ValueThenEndIsAHitOfTheWholeLength) {
  const std::string reply = hit_reply(std::string(4096, 'x'));
  const Reply r = parse_get_reply(reply);
  EXPECT_EQ(r.kind, ReplyKind::kHit);
  EXPECT_EQ(r.length, reply.size());
}

TEST(McReply, ValueWithCasIsAHit) {
  EXPECT_EQ(parse_get_reply("VALUE k 5 3 99\r\nabc\r\nEND\r\n").kind, ReplyKind::kHit);
}

// A large value arrives in pieces: every cut before the last byte is incomplete.
TEST(McReply, EveryPrefixOfAHitIsIncomplete) {
  const std::string reply = hit_reply(std::string(5000, 'y'));
  for (std::size_t n = 0; n < reply.size(); ++n) {
    ASSERT_EQ(parse_get_reply(std::string_view(reply).substr(0, n)).kind, ReplyKind::kIncomplete)
        << n;
  }
}

TEST(McReply, EveryPrefixOfAMissOrStoredIsIncomplete) {
  for (std::size_t n = 0; n < 5; ++n) {
    EXPECT_EQ(parse_get_reply(std::string_view("END\r\n").substr(0, n)).kind,
              ReplyKind::kIncomplete);
  }
  for (std::size_t n = 0; n < 8; ++n) {
    EXPECT_EQ(parse_storage_reply(std::string_view("STORED\r\n").substr(0, n)).kind,
              ReplyKind::kIncomplete);
  }
}

// The data block is counted, not scanned: a value that holds "END\r\n" is not cut short.
TEST(McReply, DataThatLooksLikeEndIsData) {
  const std::string reply = hit_reply("ab\r\nEND\r\ncd");
  const Reply r = parse_get_reply(reply);
  EXPECT_EQ(r.kind, ReplyKind::kHit);
  EXPECT_EQ(r.length, reply.size());
  EXPECT_EQ(parse_get_reply(std::string_view(reply).substr(0, 20)).kind, ReplyKind::kIncomplete);
}

TEST(McReply, ErrorLinesOnGetAreErrors) {
  EXPECT_EQ(parse_get_reply("ERROR\r\n").kind, ReplyKind::kError);
  EXPECT_EQ(parse_get_reply("SERVER_ERROR busy\r\n").kind, ReplyKind::kError);
  EXPECT_EQ(parse_get_reply("CLIENT_ERROR bad command line format\r\n").length, 38u);
}

TEST(McReply, BrokenValueHeaderOrBlockIsMalformed) {
  EXPECT_EQ(parse_get_reply("VALUE k 0\r\n").kind, ReplyKind::kMalformed);
  EXPECT_EQ(parse_get_reply("VALUE k 0 x3\r\nabc\r\nEND\r\n").kind, ReplyKind::kMalformed);
  EXPECT_EQ(parse_get_reply("VALUE k 0 3 1 2\r\nabc\r\nEND\r\n").kind, ReplyKind::kMalformed);
  // The block is one byte longer than announced.
  EXPECT_EQ(parse_get_reply("VALUE k 0 3\r\nabcd\r\nEND\r\n").kind, ReplyKind::kMalformed);
}

TEST(McReply, ReplyLengthStopsAtTheFirstReply) {
  const std::string two = hit_reply("abc") + "END\r\n";
  EXPECT_EQ(parse_get_reply(two).length, two.size() - 5);
}

}  // namespace
}  // namespace pmcached::bench

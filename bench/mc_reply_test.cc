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

TEST(McReply, AnErrorKeepsItsLine) {
  EXPECT_EQ(parse_storage_reply("SERVER_ERROR out of memory\r\nSTORED\r\n").error,
            "SERVER_ERROR out of memory");
}

TEST(McReply, MetaStoredIsHdWithOrWithoutFlags) {
  EXPECT_EQ(parse_meta_storage_reply("HD\r\n").kind, ReplyKind::kStored);
  EXPECT_EQ(parse_meta_storage_reply("HD\r\n").length, 4u);
  EXPECT_EQ(parse_meta_storage_reply("HD O7 c3\r\n").kind, ReplyKind::kStored);
  const Reply r = parse_meta_storage_reply("NS\r\n");
  EXPECT_EQ(r.kind, ReplyKind::kError);
  EXPECT_EQ(r.error, "NS");
  EXPECT_EQ(parse_meta_storage_reply("HD").kind, ReplyKind::kIncomplete);
}

TEST(McReply, MetaGetIsAHitAMissOrAnError) {
  const std::string hit = "VA 5 f0\r\nab\r\nc\r\nEN\r\n";  // data that holds "\r\n"
  const Reply r = parse_meta_get_reply(hit);
  EXPECT_EQ(r.kind, ReplyKind::kHit);
  EXPECT_EQ(r.length, hit.size() - 4);
  for (std::size_t n = 0; n < r.length; ++n) {
    ASSERT_EQ(parse_meta_get_reply(std::string_view(hit).substr(0, n)).kind, ReplyKind::kIncomplete)
        << n;
  }
  EXPECT_EQ(parse_meta_get_reply("VA 3\r\nabc\r\n").kind, ReplyKind::kHit);
  EXPECT_EQ(parse_meta_get_reply("EN\r\n").kind, ReplyKind::kMiss);
  EXPECT_EQ(parse_meta_get_reply("CLIENT_ERROR bad data chunk\r\n").kind, ReplyKind::kError);
  EXPECT_EQ(parse_meta_get_reply("VA x\r\nabc\r\n").kind, ReplyKind::kMalformed);
  EXPECT_EQ(parse_meta_get_reply("VA 3\r\nabcd\r\n").kind, ReplyKind::kMalformed);
}

// A response frame: magic 0x81, then opcode, key length, extras length, status, body length.
std::string response(std::uint8_t opcode, std::uint16_t status, const std::string& extras,
                     const std::string& value) {
  std::string frame(24, '\0');
  const std::size_t body = extras.size() + value.size();
  frame[0] = static_cast<char>(0x81);
  frame[1] = static_cast<char>(opcode);
  frame[4] = static_cast<char>(extras.size());
  frame[6] = static_cast<char>(status >> 8);
  frame[7] = static_cast<char>(status);
  frame[10] = static_cast<char>(body >> 8);
  frame[11] = static_cast<char>(body);
  return frame + extras + value;
}

TEST(McReply, BinaryStatusZeroIsStoredOrAHit) {
  const std::string stored = response(0x01, 0, "", "");
  EXPECT_EQ(parse_binary_reply(stored, /*get=*/false).kind, ReplyKind::kStored);
  EXPECT_EQ(parse_binary_reply(stored, false).length, 24u);
  const std::string hit = response(0x00, 0, std::string(4, '\0'), std::string(300, 'v'));
  const Reply r = parse_binary_reply(hit + stored, /*get=*/true);
  EXPECT_EQ(r.kind, ReplyKind::kHit);
  EXPECT_EQ(r.length, hit.size());
  for (std::size_t n = 0; n < hit.size(); ++n) {
    ASSERT_EQ(parse_binary_reply(std::string_view(hit).substr(0, n), true).kind,
              ReplyKind::kIncomplete)
        << n;
  }
}

TEST(McReply, BinaryNotFoundIsAMissOnlyForAGet) {
  const std::string not_found = response(0x00, 1, "", "Not found");
  EXPECT_EQ(parse_binary_reply(not_found, /*get=*/true).kind, ReplyKind::kMiss);
  const Reply r = parse_binary_reply(response(0x01, 0x82, "", "Out of memory"), false);
  EXPECT_EQ(r.kind, ReplyKind::kError);
  EXPECT_EQ(r.error, "Out of memory");
  EXPECT_EQ(parse_binary_reply(not_found, /*get=*/false).kind, ReplyKind::kError);
  EXPECT_EQ(parse_binary_reply("STORED\r\n", false).kind, ReplyKind::kMalformed);
}

}  // namespace
}  // namespace pmcached::bench

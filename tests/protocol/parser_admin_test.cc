// The admin command lines (lru_crawler, slabs, cache_memlimit, watch), stats cachedump's numbers
// and memcached's silent close of an HTTP request line.
#include <gtest/gtest.h>

#include "tests/protocol/parser_test_util.h"

namespace pmcached::protocol::test {
namespace {

ParseResult parse_line(std::string_view input, Command& c) {
  Parser parser;
  return parser.parse(input, c);
}

TEST(AdminParse, LruCrawlerVerbs) {
  Command c;
  ASSERT_EQ(parse_line("lru_crawler metadump all\r\n", c).status, ParseStatus::kComplete);
  EXPECT_EQ(c.kind, CommandKind::kLruCrawler);
  EXPECT_EQ(c.admin.verb, AdminVerb::kMetadump);
  EXPECT_EQ(c.admin.classes, "all");
  ASSERT_EQ(parse_line("lru_crawler sleep 50\r\n", c).status, ParseStatus::kComplete);
  EXPECT_EQ(c.admin.number, 50u);
  EXPECT_EQ(parse_line("lru_crawler sleep 1000001\r\n", c).error_reply,
            "CLIENT_ERROR sleep must be one second or less\r\n");
  EXPECT_EQ(parse_line("lru_crawler crawl\r\n", c).error_reply, "ERROR\r\n");
}

TEST(AdminParse, SlabsAndMemlimitAndNoreply) {
  Command c;
  ASSERT_EQ(parse_line("slabs reassign -1 5\r\n", c).status, ParseStatus::kComplete);
  EXPECT_EQ(c.admin.source, -1);
  EXPECT_EQ(c.admin.destination, 5);
  EXPECT_EQ(parse_line("slabs automove 3\r\n", c).error_reply, "ERROR\r\n");
  const ParseResult quiet = parse_line("slabs automove 3 noreply\r\n", c);
  EXPECT_EQ(quiet.status, ParseStatus::kError);
  EXPECT_TRUE(quiet.error_reply.empty());
  ASSERT_EQ(parse_line("cache_memlimit 100 noreply\r\n", c).status, ParseStatus::kComplete);
  EXPECT_EQ(c.kind, CommandKind::kCacheMemlimit);
  EXPECT_EQ(c.admin.number, 100u);
  EXPECT_TRUE(c.noreply);
}

TEST(AdminParse, WatchFlagsDefaultToFetchers) {
  Command c;
  ASSERT_EQ(parse_line("watch\r\n", c).status, ParseStatus::kComplete);
  EXPECT_EQ(c.admin.watch, kWatchFetchers);
  ASSERT_EQ(parse_line("watch mutations evictions\r\n", c).status, ParseStatus::kComplete);
  EXPECT_EQ(c.admin.watch, kWatchMutations | kWatchEvictions);
  EXPECT_EQ(parse_line("watch deletions\r\n", c).error_reply, "ERROR\r\n");
}

TEST(AdminParse, StatsCachedumpNumbers) {
  Command c;
  ASSERT_EQ(parse_line("stats cachedump 1 10\r\n", c).status, ParseStatus::kComplete);
  EXPECT_EQ(c.admin.number, 1u);
  EXPECT_EQ(c.admin.limit, 10u);
  EXPECT_FALSE(c.admin.bad_number);
  ASSERT_EQ(parse_line("stats cachedump x 10\r\n", c).status, ParseStatus::kComplete);
  EXPECT_TRUE(c.admin.bad_number);
}

TEST(AdminParse, HttpRequestLineClosesSilently) {
  Command c;
  const ParseResult get = parse_line("GET / HTTP/1.0\r\n", c);
  EXPECT_EQ(get.status, ParseStatus::kError);
  EXPECT_TRUE(get.close_connection);
  EXPECT_TRUE(get.error_reply.empty());
  // Unknown words starting like a frequent command, or without HTTP/ last: plain ERROR.
  for (const char* line : {"sXY / HTTP/1.0\r\n", "foo HTTP/ x\r\n", "bar http/1.0\r\n"}) {
    const ParseResult r = parse_line(line, c);
    EXPECT_EQ(r.error_reply, "ERROR\r\n") << line;
    EXPECT_FALSE(r.close_connection) << line;
  }
}

}  // namespace
}  // namespace pmcached::protocol::test

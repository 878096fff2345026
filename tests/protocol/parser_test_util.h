// Helpers for the parser tests: a canonical text form of a Command (to compare parses),
// a driver that feeds a Parser like a connection does (in chunks of any size), and the
// escape syntax of malformed_cases.txt.
//
// Thread safety: plain functions over local data.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "protocol/command.h"
#include "protocol/parser.h"

namespace pmcached::protocol::test {

// Every field of `command` that its kind uses, as one line of text.
std::string describe(const Command& command);

// What a stream of bytes produced: one entry per parse() answer other than kNeedMore.
struct StreamResult {
  std::vector<std::string> commands;  // describe() of each complete command (not too_large)
  std::string replies;  // error replies in order; "MN\r\n" for each mn and the server's
                        // "SERVER_ERROR object too large for cache" for a too_large command
                        // without noreply (like memcached)
  std::vector<std::string> events;  // "C <describe>", "T <describe>" (too_large),
                                    // "E <reply>", "S <bytes>" in order
  bool closed = false;              // the parser asked to close
};

// Feeds `input` to a fresh Parser in chunks of `chunk` bytes (0 = all at once), keeping
// unconsumed bytes like a connection buffer, and parsing until kNeedMore after each
// chunk. Checks the parser's contract on every call (kNeedMore consumes nothing, other
// answers consume something). `split_at` (if non-zero) splits the input into exactly two
// reads at that offset instead.
StreamResult run_stream(std::string_view input, std::size_t chunk, ParserLimits limits = {},
                        std::size_t split_at = 0);

// Decodes the escapes of malformed_cases.txt: \r \n \t \\ \xHH, and {{c*N}} for N copies
// of the character c.
std::string unescape(std::string_view text);

// Parses one command from `input` into `command` with a fresh parser.
ParseResult parse_one(std::string_view input, Command& command, ParserLimits limits = {});

// Parses `input`, expecting one complete command that uses all of it.
void expect_complete(std::string_view input, Command& command);

}  // namespace pmcached::protocol::test

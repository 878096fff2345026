// Canned replies: memcached's exact reply texts, byte for byte as 1.6.18 sends them, for the
// parser's errors and the server's fixed answers. One list, so a text is written once.
// Thread safety: constants.
#pragma once

#include <string_view>

namespace pmcached::protocol::reply {

inline constexpr std::string_view kError = "ERROR\r\n";
inline constexpr std::string_view kBadFormat = "CLIENT_ERROR bad command line format\r\n";
inline constexpr std::string_view kBadDeleteFormat =
    "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n";
inline constexpr std::string_view kBadExptime = "CLIENT_ERROR invalid exptime argument\r\n";
inline constexpr std::string_view kBadDelta = "CLIENT_ERROR invalid numeric delta argument\r\n";
inline constexpr std::string_view kBadDataChunk = "CLIENT_ERROR bad data chunk\r\n";
inline constexpr std::string_view kTooLarge = "SERVER_ERROR object too large for cache\r\n";
inline constexpr std::string_view kBadToken = "CLIENT_ERROR bad token in command line format\r\n";
inline constexpr std::string_view kDuplicateFlag = "CLIENT_ERROR duplicate flag\r\n";
inline constexpr std::string_view kInvalidFlag = "CLIENT_ERROR invalid flag\r\n";
inline constexpr std::string_view kInvalidOrDuplicateFlag =
    "CLIENT_ERROR invalid or duplicate flag\r\n";
inline constexpr std::string_view kKeyDecode = "CLIENT_ERROR error decoding key\r\n";
inline constexpr std::string_view kMTokenLength = "CLIENT_ERROR incorrect length for M token\r\n";
inline constexpr std::string_view kBadInitial = "CLIENT_ERROR invalid numeric initial value\r\n";
inline constexpr std::string_view kBadMetaDelta = "CLIENT_ERROR invalid numeric delta value\r\n";
inline constexpr std::string_view kOpaqueTooLong = "CLIENT_ERROR opaque token too long\r\n";
inline constexpr std::string_view kMgFlagsTooLong = "CLIENT_ERROR options flags are too long\r\n";
inline constexpr std::string_view kFlagsTooLong = "CLIENT_ERROR options flags too long\r\n";
inline constexpr std::string_view kBadMsMode = "CLIENT_ERROR invalid mode for ms M token\r\n";
inline constexpr std::string_view kBadMaMode = "CLIENT_ERROR invalid mode for ma M token\r\n";
inline constexpr std::string_view kEnd = "END\r\n";
inline constexpr std::string_view kOk = "OK\r\n";
inline constexpr std::string_view kReset = "RESET\r\n";
inline constexpr std::string_view kMetaNoop = "MN\r\n";
inline constexpr std::string_view kMetaMiss = "EN\r\n";
inline constexpr std::string_view kShutdownDisabled = "ERROR: shutdown not enabled\r\n";
inline constexpr std::string_view kTooManyConnections = "ERROR Too many open connections\r\n";
inline constexpr std::string_view kBadShutdownMode = "CLIENT_ERROR invalid shutdown mode\r\n";
inline constexpr std::string_view kStatsDetailUsage =
    "CLIENT_ERROR usage: stats detail on|off|dump\r\n";
inline constexpr std::string_view kMetaOutOfMemory = "SERVER_ERROR out of memory\r\n";
inline constexpr std::string_view kReadLimit = "SERVER_ERROR out of memory reading request\r\n";

// Admin and monitoring commands (memcached 1.6.18's words).
inline constexpr std::string_view kBadCommandLine = "CLIENT_ERROR bad command line\r\n";
inline constexpr std::string_view kIllegalSlabId = "CLIENT_ERROR Illegal slab id\r\n";
inline constexpr std::string_view kSleepTooLong =
    "CLIENT_ERROR sleep must be one second or less\r\n";
inline constexpr std::string_view kCrawlerDisabled = "CLIENT_ERROR lru crawler disabled\r\n";
inline constexpr std::string_view kCrawlerBadClass = "BADCLASS invalid class id\r\n";
inline constexpr std::string_view kCrawlerNotStarted = "NOTSTARTED no items to crawl\r\n";
inline constexpr std::string_view kMetadumpPipelined =
    "ERROR cannot pipeline other commands before metadump\r\n";
inline constexpr std::string_view kWatchPipelined =
    "ERROR cannot pipeline other commands before watch\r\n";
inline constexpr std::string_view kReassignBadClass = "BADCLASS invalid src or dst class id\r\n";
inline constexpr std::string_view kReassignNoSpare = "NOSPARE source class has no spare pages\r\n";
inline constexpr std::string_view kReassignSame = "SAME src and dst class are identical\r\n";
inline constexpr std::string_view kMemlimitTooSmall =
    "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n";
inline constexpr std::string_view kMemlimitNotBytes =
    "MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes\r\n";
inline constexpr std::string_view kMemlimitFailed =
    "MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust\r\n";

}  // namespace pmcached::protocol::reply

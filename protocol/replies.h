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

}  // namespace pmcached::protocol::reply

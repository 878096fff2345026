// The replies bench/mc_load waits for, recognised in the bytes a connection has received so
// far (which may end anywhere, e.g. in the middle of a 4 KiB value):
//   - a storage reply: one line, "STORED" or anything else ("NOT_STORED", "SERVER_ERROR ...");
//   - a one-key GET reply: "END" alone is a miss; "VALUE <key> <flags> <bytes> [<cas>]", then
//     <bytes> bytes of data (any bytes, "END\r\n" included), "\r\n" and "END" is a hit; any other
//     line ("ERROR", "CLIENT_ERROR ...", "SERVER_ERROR ...") is an error;
//   - the meta protocol's: an ms reply is one line, "HD" (with any flags) or an error; an
//     `mg <key> v` reply is "EN" (a miss), "VA <bytes> [flags]" with its data and "\r\n" (a hit),
//     or an error line;
//   - a binary response frame (magic 0x81, 24-byte header and its body) to SET or GET: status 0
//     is stored or a hit, status 1 (key not found) to a GET a miss, anything else an error.
// No I/O: bytes in, {incomplete | what the reply was, and its length} out.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <string_view>

namespace pmcached::bench {

enum class ReplyKind {
  kIncomplete,  // more bytes needed
  kStored,      // STORED
  kHit,         // VALUE ... END
  kMiss,        // END
  kError,       // any other complete line (the server's answer was not STORED / a value / END)
  kMalformed,   // bytes that are no reply to the request (a broken VALUE header or data block)
};

struct Reply {
  ReplyKind kind = ReplyKind::kIncomplete;
  std::size_t length = 0;  // bytes of the reply when it is complete (the first reply in `in`)
  // An error's text, in `in`: the line without "\r\n", or a binary response's body after its
  // extras and key (memcached's message).
  std::string_view error;
};

[[nodiscard]] Reply parse_storage_reply(std::string_view in) noexcept;
[[nodiscard]] Reply parse_get_reply(std::string_view in) noexcept;
[[nodiscard]] Reply parse_meta_storage_reply(std::string_view in) noexcept;
[[nodiscard]] Reply parse_meta_get_reply(std::string_view in) noexcept;
[[nodiscard]] Reply parse_binary_reply(std::string_view in, bool get) noexcept;

}  // namespace pmcached::bench

#include "bench/mc_reply.h"

#include <charconv>

namespace pmcached::bench {

namespace {

constexpr std::string_view kCrlf = "\r\n";
constexpr std::string_view kEnd = "END\r\n";

// The first line without its "\r\n", or npos when it has not arrived whole.
std::size_t line_end(std::string_view in) noexcept { return in.find(kCrlf); }

// Any complete line that is not the expected one.
Reply error_line(std::size_t end) noexcept { return {ReplyKind::kError, end + kCrlf.size()}; }

// <bytes> of "VALUE <key> <flags> <bytes> [<cas>]", or false when the header is not that.
bool value_bytes(std::string_view header, std::size_t& bytes) noexcept {
  std::string_view fields[5];
  std::size_t count = 0;
  while (!header.empty()) {
    const std::size_t space = header.find(' ');
    const std::string_view field = header.substr(0, space);
    if (field.empty() || count == 5) return false;
    fields[count++] = field;
    header = space == std::string_view::npos ? std::string_view{} : header.substr(space + 1);
  }
  if (count < 4 || fields[0] != "VALUE") return false;
  const std::string_view b = fields[3];
  const auto [ptr, ec] = std::from_chars(b.data(), b.data() + b.size(), bytes);
  return ec == std::errc{} && ptr == b.data() + b.size();
}

}  // namespace

Reply parse_storage_reply(std::string_view in) noexcept {
  const std::size_t end = line_end(in);
  if (end == std::string_view::npos) return {};
  if (in.substr(0, end) == "STORED") return {ReplyKind::kStored, end + kCrlf.size()};
  return error_line(end);
}

Reply parse_get_reply(std::string_view in) noexcept {
  const std::size_t end = line_end(in);
  if (end == std::string_view::npos) return {};
  const std::string_view line = in.substr(0, end);
  if (line == "END") return {ReplyKind::kMiss, kEnd.size()};
  if (!line.starts_with("VALUE ")) return error_line(end);
  std::size_t bytes = 0;
  if (!value_bytes(line, bytes)) return {ReplyKind::kMalformed, end + kCrlf.size()};
  const std::size_t data = end + kCrlf.size();
  if (bytes > in.size()) return {};  // also keeps the sum below from overflowing
  const std::size_t total = data + bytes + kCrlf.size() + kEnd.size();
  if (in.size() < total) return {};
  if (in.substr(data + bytes, kCrlf.size()) != kCrlf ||
      in.substr(data + bytes + kCrlf.size(), kEnd.size()) != kEnd) {
    return {ReplyKind::kMalformed, total};
  }
  return {ReplyKind::kHit, total};
}

}  // namespace pmcached::bench

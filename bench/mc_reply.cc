#include "bench/mc_reply.h"

#include <charconv>

namespace pmcached::bench {

namespace {

constexpr std::string_view kCrlf = "\r\n";
constexpr std::string_view kEnd = "END\r\n";

// The first line without its "\r\n", or npos when it has not arrived whole.
std::size_t line_end(std::string_view in) noexcept { return in.find(kCrlf); }

Reply made(ReplyKind kind, std::size_t length, std::string_view error = {}) noexcept {
  Reply reply;
  reply.kind = kind;
  reply.length = length;
  reply.error = error;
  return reply;
}

// Any complete line that is not the expected one.
Reply error_line(std::string_view in, std::size_t end) noexcept {
  return made(ReplyKind::kError, end + kCrlf.size(), in.substr(0, end));
}

bool parse_size(std::string_view text, std::size_t& value) noexcept {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc{} && ptr == text.data() + text.size();
}

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
  return count >= 4 && fields[0] == "VALUE" && parse_size(fields[3], bytes);
}

// The big-endian number of `bytes` bytes at `at`.
std::size_t big_endian(std::string_view in, std::size_t at, std::size_t bytes) noexcept {
  std::size_t value = 0;
  for (std::size_t i = 0; i < bytes; ++i) {
    value = value << 8 | static_cast<unsigned char>(in[at + i]);
  }
  return value;
}

}  // namespace

Reply parse_storage_reply(std::string_view in) noexcept {
  const std::size_t end = line_end(in);
  if (end == std::string_view::npos) return {};
  if (in.substr(0, end) == "STORED") return made(ReplyKind::kStored, end + kCrlf.size());
  return error_line(in, end);
}

Reply parse_get_reply(std::string_view in) noexcept {
  const std::size_t end = line_end(in);
  if (end == std::string_view::npos) return {};
  const std::string_view line = in.substr(0, end);
  if (line == "END") return made(ReplyKind::kMiss, kEnd.size());
  if (!line.starts_with("VALUE ")) return error_line(in, end);
  std::size_t bytes = 0;
  if (!value_bytes(line, bytes)) return made(ReplyKind::kMalformed, end + kCrlf.size());
  const std::size_t data = end + kCrlf.size();
  if (bytes > in.size()) return {};  // also keeps the sum below from overflowing
  const std::size_t total = data + bytes + kCrlf.size() + kEnd.size();
  if (in.size() < total) return {};
  if (in.substr(data + bytes, kCrlf.size()) != kCrlf ||
      in.substr(data + bytes + kCrlf.size(), kEnd.size()) != kEnd) {
    return made(ReplyKind::kMalformed, total);
  }
  return made(ReplyKind::kHit, total);
}

Reply parse_meta_storage_reply(std::string_view in) noexcept {
  const std::size_t end = line_end(in);
  if (end == std::string_view::npos) return {};
  const std::string_view line = in.substr(0, end);
  if (line == "HD" || line.starts_with("HD ")) return made(ReplyKind::kStored, end + kCrlf.size());
  return error_line(in, end);
}

Reply parse_meta_get_reply(std::string_view in) noexcept {
  const std::size_t end = line_end(in);
  if (end == std::string_view::npos) return {};
  const std::string_view line = in.substr(0, end);
  if (line == "EN") return made(ReplyKind::kMiss, end + kCrlf.size());
  if (!line.starts_with("VA ")) return error_line(in, end);
  std::size_t bytes = 0;
  if (!parse_size(line.substr(3, line.find(' ', 3) - 3), bytes)) {
    return made(ReplyKind::kMalformed, end + kCrlf.size());
  }
  const std::size_t data = end + kCrlf.size();
  if (bytes > in.size()) return {};
  const std::size_t total = data + bytes + kCrlf.size();
  if (in.size() < total) return {};
  if (in.substr(data + bytes, kCrlf.size()) != kCrlf) return made(ReplyKind::kMalformed, total);
  return made(ReplyKind::kHit, total);
}

Reply parse_binary_reply(std::string_view in, bool get) noexcept {
  constexpr std::size_t kHeader = 24;
  if (in.empty()) return {};
  if (static_cast<unsigned char>(in[0]) != 0x81) return made(ReplyKind::kMalformed, in.size());
  if (in.size() < kHeader) return {};
  const std::size_t key_length = big_endian(in, 2, 2);
  const std::size_t extras_length = big_endian(in, 4, 1);
  const std::size_t status = big_endian(in, 6, 2);
  const std::size_t body = big_endian(in, 8, 4);
  if (key_length + extras_length > body) return made(ReplyKind::kMalformed, in.size());
  const std::size_t total = kHeader + body;
  if (in.size() < total) return {};
  if (status == 0) return made(get ? ReplyKind::kHit : ReplyKind::kStored, total);
  if (status == 1 && get) return made(ReplyKind::kMiss, total);
  const std::size_t message = kHeader + extras_length + key_length;
  return made(ReplyKind::kError, total, in.substr(message, total - message));
}

}  // namespace pmcached::bench

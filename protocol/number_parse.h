// Number parsing with memcached's exact acceptance rules (private to protocol/).
//
// memcached parses numeric tokens with safe_strtol / safe_strtoul / safe_strtoull, thin
// wrappers over strtol(3) and friends on a 64-bit long. That means: leading whitespace and
// one '+' or '-' are accepted, the value must fit the 64-bit type (else ERANGE), and the
// character after the digits must be the end of the token or whitespace (so "5\tjunk" is
// 5). The 32-bit results are then truncated, not range-checked: "set k 0 0 4294967297"
// reads 1 byte in memcached 1.6.18, and so here. The unsigned variants refuse a value
// whose sign bit is set when the text had a '-' ("-1"), but accept "-0".
//
// Implemented with std::from_chars: no locale, no errno, no allocation.
//
// Thread safety: pure functions.
#pragma once

#include <charconv>
#include <cstdint>
#include <string_view>

namespace pmcached::protocol::detail {

// isspace() in the "C" locale.
constexpr bool is_c_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// The pieces of a strtol-style number: sign and magnitude. False if there are no digits,
// the magnitude overflows 64 bits, or garbage follows the digits.
inline bool split_number(std::string_view text, bool& negative, std::uint64_t& magnitude) noexcept {
  const char* p = text.data();
  const char* const end = p + text.size();
  while (p != end && is_c_space(*p)) ++p;
  negative = false;
  if (p != end && (*p == '+' || *p == '-')) {
    negative = *p == '-';
    ++p;
  }
  // from_chars would accept nothing but digits here; it refuses an empty or sign-led rest.
  if (p == end || *p < '0' || *p > '9') return false;
  const auto [stop, ec] = std::from_chars(p, end, magnitude, 10);
  if (ec != std::errc{}) return false;  // out of range
  return stop == end || is_c_space(*stop);
}

// memcached safe_strtoull: a u64 (cas unique, incr delta, meta C/J/D).
inline bool parse_u64(std::string_view text, std::uint64_t& out) noexcept {
  bool negative = false;
  std::uint64_t magnitude = 0;
  if (!split_number(text, negative, magnitude)) return false;
  const std::uint64_t value = negative ? (~magnitude + 1) : magnitude;  // strtoull wraps
  if (negative && static_cast<std::int64_t>(value) < 0) return false;
  out = value;
  return true;
}

// memcached safe_strtoul into a uint32_t: parsed as u64, then truncated (client flags,
// verbosity, meta F).
inline bool parse_u32(std::string_view text, std::uint32_t& out) noexcept {
  std::uint64_t value = 0;
  if (!parse_u64(text, value)) return false;
  out = static_cast<std::uint32_t>(value);
  return true;
}

// memcached safe_strtol into an int32_t: parsed as i64, then truncated (exptime, data
// length, flush_all delay, meta T/N/R and ms datalen).
inline bool parse_i32(std::string_view text, std::int32_t& out) noexcept {
  bool negative = false;
  std::uint64_t magnitude = 0;
  if (!split_number(text, negative, magnitude)) return false;
  constexpr std::uint64_t kMaxPositive = 0x7fffffffffffffffULL;
  if (magnitude > kMaxPositive + (negative ? 1 : 0)) return false;  // strtol's ERANGE
  const std::uint64_t bits = negative ? (~magnitude + 1) : magnitude;
  out = static_cast<std::int32_t>(static_cast<std::uint32_t>(bits));
  return true;
}

}  // namespace pmcached::protocol::detail

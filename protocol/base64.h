// Base64 (RFC 4648, with padding) for meta-protocol binary keys (the `b` flag). No I/O.
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace pmcached::protocol {

// Appends the base64 encoding of `bytes` to `out`.
void base64_encode_append(std::string_view bytes, std::string& out);

// Decodes `text` into `out` (replacing its contents) as memcached 1.6 decodes meta keys:
// characters outside the alphabet are skipped. Returns false for an empty result, a
// length that is not a multiple of 4, or bad padding.
[[nodiscard]] bool base64_decode(std::string_view text, std::string& out);

}  // namespace pmcached::protocol

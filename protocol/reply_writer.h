// ReplyWriter: results -> memcached wire text, appended to an output buffer. No I/O.
//
// This is the one place where neutral outcomes become STORED/EXISTS/NOT_FOUND or the meta
// codes HD/EX/NF/NS: one result, two wire formats. Meta replies echo the requested
// return flags in request order, as memcached does.
//
// Thread safety: a writer wraps one connection's buffer; not shared.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/command.h"
#include "protocol/replies.h"

namespace pmcached::protocol {

// A command's neutral outcome, as the store reports it.
enum class Outcome : std::uint8_t {
  kStored,
  kNotStored,
  kExists,
  kNotFound,
  kDeleted,
  kTouched,
  kNonNumeric,
  kTooLarge,
  kOutOfMemory,
};

// What a meta reply can report about an item; filled by the executor from the store.
struct MetaItem {
  std::string_view key;
  std::string_view value;
  std::uint32_t client_flags = 0;
  std::uint64_t cas = 0;
  std::int64_t ttl = -1;             // seconds remaining; -1 = never expires
  std::int64_t last_access_age = 0;  // seconds since the previous access
  bool hit_before = false;
  std::uint64_t size = 0;        // value size
  bool won = false;              // W
  bool stale = false;            // X
  bool token_sent = false;       // Z
  bool binary_key = false;       // k echoes the key in base64, then " b"
  std::uint32_t size_class = 1;  // me: cls=
};

class ReplyWriter {
 public:
  explicit ReplyWriter(std::string& out) : out_(out) {}

  void raw(std::string_view text) { out_.append(text); }

  // Classic replies.
  void outcome(Outcome outcome);  // STORED, NOT_FOUND, SERVER_ERROR ...
  void value(std::string_view key, std::uint32_t flags, std::string_view data);
  void value_with_cas(std::string_view key, std::uint32_t flags, std::string_view data,
                      std::uint64_t cas);
  void end() { raw(reply::kEnd); }
  void number(std::uint64_t n);  // incr/decr result
  void version(std::string_view version);
  void stat(std::string_view name, std::string_view value);
  void stat(std::string_view name, std::uint64_t value);
  void stat(std::string_view name, std::int64_t value);
  void stat(std::string_view name, double value);

  // Meta replies. `flags` are the request's flags.
  void meta_get_hit(const MetaFlags& flags, const MetaItem& item);
  void meta_get_miss(const MetaFlags& flags, std::string_view key);
  // Which of the item's own fields each meta command echoes when it has an item, as
  // memcached 1.6.18 does (O and k are always echoed): mg all, ms only c, ma c and t.
  static constexpr std::string_view kMgItemFlags = "cfhlst";
  static constexpr std::string_view kMsItemFlags = "c";
  static constexpr std::string_view kMaItemFlags = "ct";

  // ms / md / ma without a value: "<code> <flags>\r\n". O and k are always echoed; of the
  // item's own fields those named in `item_flags` ("" when the command found no item).
  void meta_status(std::string_view code, const MetaFlags& flags, const MetaItem& item,
                   std::string_view item_flags);
  // ma with v: "VA <len> <flags>\r\n<value>\r\n".
  void meta_value(const MetaFlags& flags, const MetaItem& item);
  void meta_debug(std::string_view key, bool base64, const MetaItem& item, std::size_t total_size);

 private:
  void append_value(std::string_view key, std::uint32_t flags, std::string_view data,
                    const std::uint64_t* cas);
  void append_number(std::uint64_t n);
  void append_signed(std::int64_t n);
  void append_key(std::string_view key, bool base64);
  void append_meta_flags(const MetaFlags& flags, const MetaItem& item, std::string_view item_flags);

  std::string& out_;
};

// memcached's reply text for an outcome in the classic protocol, with "\r\n".
[[nodiscard]] std::string_view classic_text(Outcome outcome) noexcept;

// The two-letter meta return code for an outcome (HD, NS, EX, NF).
[[nodiscard]] std::string_view meta_code(Outcome outcome) noexcept;

}  // namespace pmcached::protocol

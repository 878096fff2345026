#include "protocol/reply_writer.h"

#include <charconv>
#include <cstdio>

#include "protocol/base64.h"

namespace pmcached::protocol {

std::string_view classic_text(Outcome outcome) noexcept {
  switch (outcome) {
    case Outcome::kStored: return "STORED\r\n";
    case Outcome::kNotStored: return "NOT_STORED\r\n";
    case Outcome::kExists: return "EXISTS\r\n";
    case Outcome::kNotFound: return "NOT_FOUND\r\n";
    case Outcome::kDeleted: return "DELETED\r\n";
    case Outcome::kTouched: return "TOUCHED\r\n";
    case Outcome::kNonNumeric:
      return "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n";
    case Outcome::kTooLarge: return "SERVER_ERROR object too large for cache\r\n";
    case Outcome::kOutOfMemory: return "SERVER_ERROR out of memory storing object\r\n";
  }
  return "SERVER_ERROR unhandled outcome\r\n";
}

std::string_view meta_code(Outcome outcome) noexcept {
  switch (outcome) {
    case Outcome::kStored:
    case Outcome::kDeleted:
    case Outcome::kTouched: return "HD";
    case Outcome::kNotStored: return "NS";
    case Outcome::kExists: return "EX";
    case Outcome::kNotFound: return "NF";
    default: return "SERVER_ERROR";
  }
}

void ReplyWriter::outcome(Outcome result) { raw(classic_text(result)); }

void ReplyWriter::append_number(std::uint64_t n) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, n);
  out_.append(buf, end);
}

void ReplyWriter::append_signed(std::int64_t n) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, n);
  out_.append(buf, end);
}

void ReplyWriter::value(std::string_view key, std::uint32_t flags, std::string_view data) {
  append_value(key, flags, data, nullptr);
}

void ReplyWriter::value_with_cas(std::string_view key, std::uint32_t flags, std::string_view data,
                                 std::uint64_t cas) {
  append_value(key, flags, data, &cas);
}

// "VALUE <key> <flags> <bytes> [<cas>]\r\n<data>\r\n"
void ReplyWriter::append_value(std::string_view key, std::uint32_t flags, std::string_view data,
                               const std::uint64_t* cas) {
  out_.append("VALUE ");
  out_.append(key);
  out_.push_back(' ');
  append_number(flags);
  out_.push_back(' ');
  append_number(data.size());
  if (cas != nullptr) {
    out_.push_back(' ');
    append_number(*cas);
  }
  out_.append("\r\n");
  out_.append(data);
  out_.append("\r\n");
}

void ReplyWriter::number(std::uint64_t n) {
  append_number(n);
  out_.append("\r\n");
}

void ReplyWriter::version(std::string_view text) {
  out_.append("VERSION ");
  out_.append(text);
  out_.append("\r\n");
}

void ReplyWriter::stat(std::string_view name, std::string_view text) {
  out_.append("STAT ");
  out_.append(name);
  out_.push_back(' ');
  out_.append(text);
  out_.append("\r\n");
}

void ReplyWriter::stat(std::string_view name, std::uint64_t n) {
  out_.append("STAT ");
  out_.append(name);
  out_.push_back(' ');
  append_number(n);
  out_.append("\r\n");
}

void ReplyWriter::stat(std::string_view name, std::int64_t n) {
  out_.append("STAT ");
  out_.append(name);
  out_.push_back(' ');
  append_signed(n);
  out_.append("\r\n");
}

void ReplyWriter::stat(std::string_view name, double n) {
  char buf[48];
  const int len = std::snprintf(buf, sizeof buf, "%.6f", n);
  stat(name, std::string_view(buf, static_cast<std::size_t>(len)));
}

void ReplyWriter::append_key(std::string_view key, bool base64) {
  if (!base64) {
    out_.append(key);
    return;
  }
  base64_encode_append(key, out_);
}

// Echoes the request's return flags in request order, e.g. " c42 t-1 Oabc". O and k are
// always echoed; the item's fields only those named in `item_flags`.
void ReplyWriter::append_meta_flags(const MetaFlags& flags, const MetaItem& item,
                                    std::string_view item_flags) {
  for (const MetaFlag& flag : flags.in_order) {
    if (flag.letter != 'O' && flag.letter != 'k' &&
        item_flags.find(flag.letter) == std::string_view::npos) {
      continue;
    }
    switch (flag.letter) {
      case 'O':
        out_.append(" O");
        out_.append(flag.token);
        break;
      case 'k':
        out_.append(" k");
        append_key(item.key, item.binary_key);
        if (item.binary_key) out_.append(" b");
        break;
      case 'c':
        out_.append(" c");
        append_number(item.cas);
        break;
      case 'f':
        out_.append(" f");
        append_number(item.client_flags);
        break;
      case 'h': out_.append(item.hit_before ? " h1" : " h0"); break;
      case 'l':
        out_.append(" l");
        append_signed(item.last_access_age);
        break;
      case 's':
        out_.append(" s");
        append_number(item.size);
        break;
      case 't':
        out_.append(" t");
        append_signed(item.ttl);
        break;
      default: break;
    }
  }
}

void ReplyWriter::meta_get_hit(const MetaFlags& flags, const MetaItem& item) {
  if (flags.return_value) {
    out_.append("VA ");
    append_number(item.value.size());
  } else {
    out_.append("HD");
  }
  append_meta_flags(flags, item, kMgItemFlags);
  // memcached reports Z before X, and never W together with Z.
  if (item.token_sent) out_.append(" Z");
  if (item.stale) out_.append(" X");
  if (item.won) out_.append(" W");
  out_.append("\r\n");
  if (flags.return_value) {
    out_.append(item.value);
    out_.append("\r\n");
  }
}

void ReplyWriter::meta_get_miss(const MetaFlags& flags, std::string_view key) {
  MetaItem item;
  item.key = key;
  item.binary_key = flags.base64_key;
  out_.append("EN");
  append_meta_flags(flags, item, {});
  out_.append("\r\n");
}

void ReplyWriter::meta_status(std::string_view code, const MetaFlags& flags, const MetaItem& item,
                              std::string_view item_flags) {
  out_.append(code);
  append_meta_flags(flags, item, item_flags);
  out_.append("\r\n");
}

void ReplyWriter::meta_value(const MetaFlags& flags, const MetaItem& item) {
  out_.append("VA ");
  append_number(item.value.size());
  append_meta_flags(flags, item, kMaItemFlags);
  out_.append("\r\n");
  out_.append(item.value);
  out_.append("\r\n");
}

void ReplyWriter::meta_debug(std::string_view key, bool base64, const MetaItem& item,
                             std::size_t total_size) {
  out_.append("ME ");
  append_key(key, base64);
  out_.append(" exp=");
  append_signed(item.ttl);
  out_.append(" la=");
  append_signed(item.last_access_age);
  out_.append(" cas=");
  append_number(item.cas);
  out_.append(item.hit_before ? " fetch=yes" : " fetch=no");
  out_.append(" cls=");
  append_number(item.size_class);
  out_.append(" size=");
  append_number(total_size);
  out_.append("\r\n");
}

}  // namespace pmcached::protocol

#include "protocol/classic_replies.h"

namespace pmcached::protocol {

void TextReplies::hit(std::string_view key, std::uint32_t flags, std::string_view value,
                      std::uint64_t cas) {
  // memcached looks up (and gat touches) the keys before one over the limit, answering only
  // the error.
  if (command_.key_too_long) return;
  if (command_.kind == CommandKind::kGets || command_.kind == CommandKind::kGats) {
    writer_.value_with_cas(key, flags, value, cas);
  } else {
    writer_.value(key, flags, value);
  }
}

void TextReplies::end() {
  if (command_.key_too_long) {
    writer_.raw(reply::kBadFormat);
    return;
  }
  writer_.end();
}

void TextReplies::outcome(Outcome outcome, std::uint64_t) {
  if (!command_.noreply) writer_.outcome(outcome);
}

void TextReplies::number(std::uint64_t value, std::uint64_t) {
  if (!command_.noreply) writer_.number(value);
}

void TextReplies::ok() {
  if (!command_.noreply) writer_.raw(reply::kOk);
}

}  // namespace pmcached::protocol

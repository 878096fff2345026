// The admin and monitoring command lines (lru_crawler, slabs, cache_memlimit, watch) and the
// HTTP check, with memcached 1.6.18's token counts and error words (proto_text.c). memcached's
// `ntokens` counts a terminal token too; `nt` below is that count.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "protocol/number_parse.h"
#include "protocol/parser_detail.h"

namespace pmcached::protocol::detail {
namespace {

constexpr std::string_view kNoreply = "noreply";

// memcached's ntokens: the tokens it keeps (at most 23) plus the terminal one.
std::size_t memcached_ntokens(const Tokens& t) noexcept {
  return std::min<std::size_t>(t.count, 23) + 1;
}

// memcached's set_noreply_maybe(): the last token it kept is "noreply".
bool noreply_token(const Tokens& t) noexcept {
  return t.count >= 1 && t.token[memcached_ntokens(t) - 2] == kNoreply;
}

LineOutcome reply_unless(bool noreply, std::string_view text) noexcept {
  return LineOutcome::error(noreply ? std::string_view{} : text);
}

// safe_strtod: strtod that consumed something and stopped at the end or at whitespace.
bool parse_double(std::string_view text, double& out) {
  const std::string copy(text);
  char* end = nullptr;
  out = std::strtod(copy.c_str(), &end);
  return end != copy.c_str() && (*end == '\0' || is_c_space(*end));
}

LineOutcome parse_lru_crawler(const Tokens& t, Command& command) {
  command.kind = CommandKind::kLruCrawler;
  AdminArgs& a = command.admin;
  const std::size_t nt = memcached_ntokens(t);
  const std::string_view sub = t.count > 1 ? t.token[1] : std::string_view{};
  if (nt == 4 && (sub == "crawl" || sub == "metadump")) {
    a.verb = sub == "crawl" ? AdminVerb::kCrawl : AdminVerb::kMetadump;
    a.classes = t.token[2];
    return LineOutcome::done();
  }
  if (nt == 4 && (sub == "tocrawl" || sub == "sleep")) {
    a.verb = sub == "tocrawl" ? AdminVerb::kTocrawl : AdminVerb::kSleep;
    if (!parse_u32(t.token[2], a.number)) return LineOutcome::error(reply::kBadFormat);
    if (a.verb == AdminVerb::kSleep && a.number > 1000000) {
      return LineOutcome::error(reply::kSleepTooLong);
    }
    return LineOutcome::done();
  }
  if (nt == 3 && (sub == "enable" || sub == "disable")) {
    a.verb = sub == "enable" ? AdminVerb::kEnable : AdminVerb::kDisable;
    return LineOutcome::done();
  }
  return LineOutcome::error(reply::kError);
}

LineOutcome parse_slabs(const Tokens& t, Command& command) {
  command.kind = CommandKind::kSlabs;
  AdminArgs& a = command.admin;
  const std::size_t nt = memcached_ntokens(t);
  if (nt == 5 && t.token[1] == "reassign") {
    a.verb = AdminVerb::kReassign;
    if (!parse_i32(t.token[2], a.source) || !parse_i32(t.token[3], a.destination)) {
      return LineOutcome::error(reply::kBadFormat);
    }
    return LineOutcome::done();
  }
  if (nt >= 4 && t.token[1] == "automove") {
    command.noreply = noreply_token(t);
    if (t.token[2] == "ratio") {
      a.verb = AdminVerb::kAutomoveRatio;
      if (nt < 5 || !parse_double(t.token[3], a.ratio)) {
        return reply_unless(command.noreply, reply::kError);
      }
      return LineOutcome::done();
    }
    a.verb = AdminVerb::kAutomove;
    if (!parse_u32(t.token[2], a.number)) return reply_unless(command.noreply, reply::kBadFormat);
    if (a.number > 2) return reply_unless(command.noreply, reply::kError);
    return LineOutcome::done();
  }
  return LineOutcome::error(reply::kError);
}

LineOutcome parse_cache_memlimit(const Tokens& t, Command& command) {
  command.kind = CommandKind::kCacheMemlimit;
  const std::size_t nt = memcached_ntokens(t);
  if (nt != 3 && nt != 4) return LineOutcome::error(reply::kError);
  command.noreply = noreply_token(t);
  if (!parse_u32(t.token[1], command.admin.number)) {
    return reply_unless(command.noreply, reply::kError);
  }
  return LineOutcome::done();
}

LineOutcome parse_watch(const Tokens& t, Command& command) {
  command.kind = CommandKind::kWatch;
  command.noreply = noreply_token(t);
  const std::size_t nt = memcached_ntokens(t);
  std::uint16_t flags = 0;
  static constexpr std::pair<std::string_view, WatchFlag> kNames[] = {
      {"rawcmds", kWatchRawcmds},     {"evictions", kWatchEvictions},
      {"fetchers", kWatchFetchers},   {"mutations", kWatchMutations},
      {"sysevents", kWatchSysevents}, {"connevents", kWatchConnevents},
      {"proxyreqs", kWatchProxyreqs}, {"proxyevents", kWatchProxyevents},
      {"proxyuser", kWatchProxyuser},
  };
  for (std::size_t x = 1; x + 1 < nt; ++x) {
    const auto* found = std::find_if(std::begin(kNames), std::end(kNames),
                                     [&](const auto& entry) { return entry.first == t.token[x]; });
    if (found == std::end(kNames)) return reply_unless(command.noreply, reply::kError);
    flags |= found->second;
  }
  command.admin.watch = flags != 0 ? flags : std::uint16_t{kWatchFetchers};
  return LineOutcome::done();
}

}  // namespace

bool parse_admin_command(const Tokens& tokens, Command& command, LineOutcome& outcome) {
  const std::string_view name = tokens.token[0];
  if (name == "lru_crawler") {
    outcome = parse_lru_crawler(tokens, command);
  } else if (name == "slabs") {
    outcome = parse_slabs(tokens, command);
  } else if (name == "cache_memlimit") {
    outcome = parse_cache_memlimit(tokens, command);
  } else if (name == "watch") {
    outcome = parse_watch(tokens, command);
  } else {
    return false;
  }
  return true;
}

bool looks_like_http(const Tokens& tokens) noexcept {
  if (tokens.count == 0) return false;
  return tokens.token[memcached_ntokens(tokens) - 2].starts_with("HTTP/");
}

}  // namespace pmcached::protocol::detail

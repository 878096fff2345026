#include "server/admin_commands.h"

#include <algorithm>
#include <bitset>
#include <cstdio>
#include <string_view>

#include "protocol/replies.h"
#include "server/log_watchers.h"

namespace pmcached::server {
namespace {

namespace reply = protocol::reply;
using protocol::AdminVerb;

// memcached's lru_crawler_crawl() class list: "all", or ids 1..63 separated by ',' (strtok:
// empty pieces are skipped). Sets the bit of every class named.
bool valid_classes(std::string_view classes, std::bitset<kLargestClassId + 1>& selected) {
  selected.reset();
  if (classes == "all") {
    selected.set();
    return true;
  }
  while (!classes.empty()) {
    const std::size_t comma = std::min(classes.find(','), classes.size());
    const std::string_view piece = classes.substr(0, comma);
    classes.remove_prefix(std::min(comma + 1, classes.size()));
    if (piece.empty()) continue;
    unsigned id = 0;
    for (const char c : piece) {
      if (c < '0' || c > '9' || id > kLargestClassId) return false;
      id = id * 10 + static_cast<unsigned>(c - '0');
    }
    if (id < 1 || id > kLargestClassId) return false;
    selected.set(id);
  }
  return true;
}

void metadump(ServerContext& context, const std::bitset<kLargestClassId + 1>& selected,
              std::string& out) {
  if (selected.any()) {
    std::string line;
    context.store.scan_items("", [&](const engine::ItemView& item) {
      if (item.size_class > kLargestClassId || !selected.test(item.size_class)) return true;
      line.assign("key=");
      append_uri_encoded(line, item.key);
      char rest[160];
      const int n = std::snprintf(
          rest, sizeof rest, " exp=%lld la=%lld cas=%llu fetch=%s cls=%u size=%zu\n",
          static_cast<long long>(item.exptime == 0 ? -1 : item.exptime),
          static_cast<long long>(item.last_access), static_cast<unsigned long long>(item.cas),
          item.fetched ? "yes" : "no", static_cast<unsigned>(item.size_class),
          memcached_item_total(item.key.size(), item.value.size(), item.client_flags));
      line.append(rest, static_cast<std::size_t>(n));
      out.append(line);
      return true;
    });
  }
  out.append(reply::kEnd);
}

void lru_crawler(ServerContext& context, const protocol::Command& command, std::string& out) {
  AdminState& admin = context.admin;
  const protocol::AdminArgs& a = command.admin;
  switch (a.verb) {
    case AdminVerb::kCrawl:
    case AdminVerb::kMetadump: {
      if (!admin.crawler_enabled.load(std::memory_order_relaxed)) {
        out.append(reply::kCrawlerDisabled);
        return;
      }
      if (a.verb == AdminVerb::kMetadump && !out.empty()) {
        out.append(reply::kMetadumpPipelined);
        return;
      }
      std::bitset<kLargestClassId + 1> selected;
      if (!valid_classes(a.classes, selected)) {
        out.append(reply::kCrawlerBadClass);
        return;
      }
      if (a.verb == AdminVerb::kMetadump) {
        metadump(context, selected, out);
      } else {
        admin.crawl_requested.store(true, std::memory_order_relaxed);  // the sweep does it
        out.append(reply::kOk);
      }
      return;
    }
    case AdminVerb::kTocrawl: admin.crawler_tocrawl.store(a.number); break;
    case AdminVerb::kSleep: admin.crawler_sleep_us.store(a.number); break;
    case AdminVerb::kEnable: admin.crawler_enabled.store(true); break;
    case AdminVerb::kDisable: admin.crawler_enabled.store(false); break;
    default: out.append(reply::kError); return;
  }
  out.append(reply::kOk);
}

void slabs(ServerContext& context, const protocol::Command& command, std::string& out) {
  const protocol::AdminArgs& a = command.admin;
  if (a.verb == AdminVerb::kReassign) {
    // memcached: 0 (its global page pool) .. its largest class. A paged engine has no classes:
    // any id memcached could have is accepted.
    const std::size_t classes = context.store.slab_stats().classes.size();
    const std::int32_t largest =
        classes == 0 ? std::int32_t{kLargestClassId} : static_cast<std::int32_t>(classes);
    const auto valid = [largest](std::int32_t id) { return id >= 0 && id <= largest; };
    if (a.source == a.destination) {
      out.append(reply::kReassignSame);
    } else if (!valid(a.source) || !valid(a.destination)) {
      out.append(reply::kReassignBadClass);
    } else {
      // No class keeps pages to give: the heap moves chunks between classes by itself.
      out.append(reply::kReassignNoSpare);
    }
    return;
  }
  if (a.verb == AdminVerb::kAutomoveRatio) {
    context.admin.slab_automove_ratio.store(a.ratio);
  } else {
    context.admin.slab_automove.store(a.number);
  }
  if (!command.noreply) out.append(reply::kOk);
}

void cache_memlimit(ServerContext& context, const protocol::Command& command, std::string& out) {
  const std::uint32_t megabytes = command.admin.number;
  std::string_view answer = reply::kOk;
  if (megabytes < 8) {
    answer = reply::kMemlimitTooSmall;
  } else if (megabytes > 1000000000) {
    answer = reply::kMemlimitNotBytes;
  } else if (context.store.set_memory_limit(static_cast<std::size_t>(megabytes) << 20)) {
    context.admin.maxbytes.store(static_cast<std::uint64_t>(megabytes) << 20);
  } else {
    answer = reply::kMemlimitFailed;  // a pool or page file keeps the size it was made with
  }
  if (!command.noreply) out.append(answer);
}

void stats_conns(ServerContext& context, std::string& out) {
  protocol::ReplyWriter w(out);
  std::vector<ConnectionInfo> all;
  if (context.admin.list_connections) all = context.admin.list_connections();
  std::sort(all.begin(), all.end(),
            [](const ConnectionInfo& a, const ConnectionInfo& b) { return a.fd < b.fd; });
  const std::int64_t now = context.store.now();
  std::string name;
  for (const ConnectionInfo& c : all) {
    const std::string prefix = std::to_string(c.fd) + ":";
    w.stat(prefix + "addr", std::string_view(c.addr));
    if (!c.listen_addr.empty()) w.stat(prefix + "listen_addr", std::string_view(c.listen_addr));
    w.stat(prefix + "state", std::string_view(c.state));
    w.stat(prefix + "secs_since_last_cmd",
           std::max<std::int64_t>(
               0, now - (c.last_command_at != 0 ? c.last_command_at : context.started_at)));
  }
  w.end();
}

void stats_cachedump(ServerContext& context, const protocol::Command& command, std::string& out) {
  const auto& args = command.keys;  // "cachedump" <class> <limit>
  if (args.size() < 3) {
    out.append(reply::kBadCommandLine);
    return;
  }
  const std::uint32_t id = command.admin.number;
  const std::uint32_t limit = command.admin.limit;
  if (command.admin.bad_number) {
    out.append(reply::kBadFormat);
    return;
  }
  if (id > kLargestClassId) {
    out.append(reply::kIllegalSlabId);
    return;
  }
  // memcached stops at 2 MB of reply.
  constexpr std::size_t kMaxBytes = 2u << 20;
  const std::size_t start = out.size();
  std::uint32_t shown = 0;
  context.store.scan_items("", [&](const engine::ItemView& item) {
    if (item.size_class != id) return true;
    char line[400];
    const int n = std::snprintf(line, sizeof line, "ITEM %.*s [%zu b; %lld s]\r\n",
                                static_cast<int>(item.key.size()), item.key.data(),
                                item.value.size(), static_cast<long long>(item.exptime));
    if (out.size() - start + static_cast<std::size_t>(n) + 5 > kMaxBytes) return false;
    out.append(line, static_cast<std::size_t>(n));
    return limit == 0 || ++shown < limit;
  });
  out.append(reply::kEnd);
}

}  // namespace

AfterCommand run_admin_command(ServerContext& context, const protocol::Command& command,
                               std::string& out) {
  switch (command.kind) {
    case protocol::CommandKind::kLruCrawler: lru_crawler(context, command, out); break;
    case protocol::CommandKind::kSlabs: slabs(context, command, out); break;
    case protocol::CommandKind::kCacheMemlimit: cache_memlimit(context, command, out); break;
    case protocol::CommandKind::kWatch:
      if (!out.empty()) {
        if (!command.noreply) out.append(reply::kWatchPipelined);
        break;
      }
      out.append(reply::kOk);
      return AfterCommand::kWatch;
    default: out.append(reply::kError); break;
  }
  return AfterCommand::kContinue;
}

bool write_admin_stats(ServerContext& context, const protocol::Command& command, std::string& out) {
  if (command.keys.empty()) return false;
  const std::string_view sub = command.keys[0];
  if (sub == "sizes") {
    // memcached 1.6.18 tracks item sizes only with -o track_sizes; pmcached has no such option.
    out.append("STAT sizes_status disabled\r\nEND\r\n");
  } else if (sub == "detail") {
    const std::string_view what = command.keys.size() >= 2 ? command.keys[1] : std::string_view{};
    if (what == "on" || what == "off") {
      context.admin.prefixes.set_enabled(what == "on");
      out.append(reply::kOk);
    } else if (what == "dump") {
      context.admin.prefixes.dump(out);
    } else {
      out.append(reply::kStatsDetailUsage);
    }
  } else if (sub == "cachedump") {
    stats_cachedump(context, command, out);
  } else if (sub == "conns") {
    stats_conns(context, out);
  } else {
    return false;
  }
  return true;
}

}  // namespace pmcached::server

#include "server/stats_report.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

#include "server/command_executor.h"
#include "server/descriptor_limit.h"
#include "server/slab_report.h"

namespace pmcached::server {
namespace {

double seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; }

void write_general(ServerContext& context, protocol::ReplyWriter& w) {
  const engine::StoreStats s = context.store.stats();
  const StatsTotals t = context.stats.totals();
  const std::int64_t now = context.store.now();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const config::Options& o = context.options;

  w.stat("pid", static_cast<std::int64_t>(getpid()));
  w.stat("uptime", now - context.started_at);
  w.stat("time", now);
  w.stat("version", kVersionText);
  w.stat("pointer_size", static_cast<std::uint64_t>(sizeof(void*) * 8));
  w.stat("rusage_user", seconds(usage.ru_utime));
  w.stat("rusage_system", seconds(usage.ru_stime));
  w.stat("max_connections", static_cast<std::uint64_t>(o.max_connections));
  w.stat("curr_connections", t.curr_connections);
  w.stat("total_connections", t.total_connections);
  w.stat("rejected_connections", t.rejected_connections);
  w.stat("connection_structures", t.connection_structures);
  // The descriptors kept besides connections (descriptor_limit.h), as memcached's reserved_fds.
  w.stat("reserved_fds", static_cast<std::uint64_t>(descriptor_headroom(o.threads)));
  w.stat("cmd_get", s.cmd_get);
  w.stat("cmd_set", s.cmd_set);
  w.stat("cmd_flush", s.cmd_flush);
  w.stat("cmd_touch", s.cmd_touch);
  w.stat("cmd_meta", t.cmd_meta);
  w.stat("get_hits", s.get_hits);
  w.stat("get_misses", s.get_misses);
  w.stat("get_expired", s.get_expired);
  w.stat("get_flushed", s.get_flushed);
  w.stat("delete_misses", s.delete_misses);
  w.stat("delete_hits", s.delete_hits);
  w.stat("incr_misses", s.incr_misses);
  w.stat("incr_hits", s.incr_hits);
  w.stat("decr_misses", s.decr_misses);
  w.stat("decr_hits", s.decr_hits);
  w.stat("cas_misses", s.cas_misses);
  w.stat("cas_hits", s.cas_hits);
  w.stat("cas_badval", s.cas_badval);
  w.stat("touch_hits", s.touch_hits);
  w.stat("touch_misses", s.touch_misses);
  w.stat("store_too_large", t.store_too_large);
  w.stat("store_no_memory", t.store_no_memory);
  w.stat("bytes_read", t.bytes_read);
  w.stat("bytes_written", t.bytes_written);
  w.stat("limit_maxbytes", s.limit_maxbytes);
  w.stat("accepting_conns", std::uint64_t{t.accepting_conns ? 1u : 0u});
  w.stat("listen_disabled_num", t.listen_disabled_num);
  w.stat("time_in_listen_disabled_us", t.time_in_listen_disabled_us);
  w.stat("threads", static_cast<std::uint64_t>(o.threads));
  w.stat("conn_yields", t.conn_yields);
  // The background expiry sweep is pmcached's LRU crawler; it runs inside one timer tick.
  w.stat("lru_crawler_running", std::uint64_t{0});
  w.stat("lru_crawler_starts", context.admin.crawler_starts.load(std::memory_order_relaxed));
  w.stat("bytes", s.bytes);
  w.stat("curr_items", s.curr_items);
  w.stat("total_items", s.total_items);
  w.stat("expired_unfetched", s.expired_unfetched);
  w.stat("evicted_unfetched", s.evicted_unfetched);
  w.stat("evictions", s.evictions);
  w.stat("reclaimed", s.reclaimed);
  w.stat("crawler_reclaimed", context.admin.crawler_reclaimed.load(std::memory_order_relaxed));
  w.stat("crawler_items_checked",
         context.admin.crawler_items_checked.load(std::memory_order_relaxed));
  w.stat("engine", context.store.engine_name());
  w.stat("engine_persistent",
         std::string_view(context.store.engine_capabilities().persistent ? "yes" : "no"));
  if (context.storage != nullptr && context.storage->recovery()) {
    const engine::RecoveryReport& r = *context.storage->recovery();
    w.stat("recovery_time_us", r.time_us);
    w.stat("items_recovered", r.items_recovered);
    w.stat("items_dropped", r.items_dropped);
  }
}

// The persistent-memory layer: the pool, what kind of PM it is, and flush/fence counts per
// operation kind (lines flushed per insert is seed 002 Table 5.1's figure).
void write_pm(ServerContext& context, protocol::ReplyWriter& w) {
  const std::optional<engine::PmStats> pm =
      context.storage != nullptr ? context.storage->pm_stats() : std::nullopt;
  if (!pm) {
    w.stat("pool", std::string_view("none (volatile engine)"));
    return;
  }
  w.stat("pool", std::string_view(context.options.pool_path));
  w.stat("pool_bytes", pm->pool_bytes);
  w.stat("pm_mode", std::string_view(pm->real_pm ? "real" : "emulated"));
  w.stat("pm_flush", pm->flush_instruction);
  w.stat("pm_write_latency_ns", static_cast<std::uint64_t>(context.options.pm_write_latency_ns));
  w.stat("heap_bytes", pm->heap_bytes);
  w.stat("heap_bytes_in_use", pm->heap_bytes_in_use);
  w.stat("heap_blocks_in_use", pm->heap_blocks_in_use);
  w.stat("heap_chunks_in_use", pm->heap_chunks_in_use);
  w.stat("heap_chunks_total", pm->heap_chunks_total);
  for (const engine::PmStats::Persists& p : pm->persists) {
    const std::string name(p.kind);
    w.stat(name + "_ops", p.operations);
    w.stat(name + "_lines_flushed", p.lines_flushed);
    w.stat(name + "_fences", p.fences);
  }
}

void write_settings(ServerContext& context, protocol::ReplyWriter& w) {
  const config::Options& o = context.options;
  const std::uint64_t adjusted = context.admin.maxbytes.load(std::memory_order_relaxed);
  w.stat("maxbytes",
         adjusted != 0 ? adjusted : static_cast<std::uint64_t>(o.memory_limit_mb) << 20);
  w.stat("maxconns", static_cast<std::uint64_t>(o.max_connections));
  w.stat("tcpport", static_cast<std::uint64_t>(o.port));
  w.stat("udpport", std::uint64_t{0});
  w.stat("inter", std::string_view(o.listen_address));
  w.stat("verbosity", static_cast<std::int64_t>(context.verbosity.load()));
  w.stat("evictions", std::string_view(o.no_evict ? "off" : "on"));
  // The size classes in effect: a reopened pool keeps its own.
  const pm::SlabSettings slabs = context.store.slab_settings().value_or(
      pm::SlabSettings{1u << 20, o.slab_min_size, o.slab_growth_factor, o.slab_chunk_max});
  char factor[32];
  std::snprintf(factor, sizeof factor, "%.2f", slabs.growth_factor);
  w.stat("growth_factor", std::string_view(factor));
  w.stat("chunk_size", std::uint64_t{slabs.min_size});
  w.stat("num_threads", static_cast<std::uint64_t>(o.threads));
  w.stat("stat_key_prefix", std::string_view(":"));
  w.stat("detail_enabled", std::string_view(context.admin.prefixes.enabled() ? "yes" : "no"));
  w.stat("cas_enabled", std::string_view("yes"));
  w.stat("item_size_max", static_cast<std::uint64_t>(o.item_size_max));
  w.stat("maxconns_fast", std::string_view("yes"));
  const AdminState& a = context.admin;
  w.stat("slab_automove", static_cast<std::uint64_t>(a.slab_automove.load()));
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.2f", a.slab_automove_ratio.load());
  w.stat("slab_automove_ratio", std::string_view(ratio));
  w.stat("slab_chunk_max", std::uint64_t{slabs.chunk_max});
  w.stat("lru_crawler", std::string_view(a.crawler_enabled.load() ? "yes" : "no"));
  w.stat("lru_crawler_sleep", static_cast<std::uint64_t>(a.crawler_sleep_us.load()));
  w.stat("lru_crawler_tocrawl", static_cast<std::uint64_t>(a.crawler_tocrawl.load()));
  w.stat("shutdown_command", std::string_view(o.enable_shutdown ? "yes" : "no"));
  w.stat("flush_enabled", std::string_view("yes"));
  w.stat("dump_enabled", std::string_view("yes"));
  w.stat("engine", std::string_view(o.engine));
  w.stat("pool", std::string_view(o.pool_path));
}

void write_items(ServerContext& context, protocol::ReplyWriter& w) {
  write_item_classes(context.store, w);
}

void write_slabs(ServerContext& context, protocol::ReplyWriter& w) {
  write_slab_classes(context.store, w);
}

// `stats latency`: per phase (server_stats.h), the count and the p50/p99/p99.9/max in ns (bucket
// upper bounds, at most 12.5% high). Zero counts unless the server runs with --latency-stats.
void write_latency(ServerContext& context, protocol::ReplyWriter& w) {
  w.stat("latency_stats", std::string_view(context.options.latency_stats ? "on" : "off"));
  const ServerStats::LatencySnapshot l = context.stats.latency();
  const std::pair<std::string_view, const LatencyHistogram::Snapshot*> phases[] = {
      {"parse", &l.parse}, {"execute", &l.execute}, {"write", &l.write}, {"request", &l.request}};
  std::string name;
  for (const auto& [phase, histogram] : phases) {
    const auto put = [&](std::string_view suffix, std::uint64_t value) {
      name.assign(phase).append("_").append(suffix);
      w.stat(name, value);
    };
    put("count", histogram->count());
    put("p50_ns", histogram->percentile(0.5));
    put("p99_ns", histogram->percentile(0.99));
    put("p999_ns", histogram->percentile(0.999));
    put("max_ns", histogram->percentile(1.0));
  }
}

void write_engine(ServerContext& context, protocol::ReplyWriter& w) {
  w.stat("engine", context.store.engine_name());
  for (const engine::EngineStat& stat : context.store.engine_stats()) {
    if (stat.name == "engine") continue;  // the engines name themselves too: one line is enough
    w.stat(stat.name, stat.value);
  }
}

}  // namespace

void write_stats(ServerContext& context, std::string_view group, protocol::ReplyWriter& w) {
  if (group.empty()) {
    write_general(context, w);
  } else if (group == "settings") {
    write_settings(context, w);
  } else if (group == "items") {
    write_items(context, w);
  } else if (group == "slabs") {
    write_slabs(context, w);
  } else if (group == "engine") {
    write_engine(context, w);
  } else if (group == "pm") {
    write_pm(context, w);
  } else if (group == "latency") {
    write_latency(context, w);
  } else if (group == "reset") {
    context.store.reset_stats();
    context.stats.reset();
    context.admin.prefixes.clear();
    w.raw(protocol::reply::kReset);
    return;
  } else {
    w.raw(protocol::reply::kError);
    return;
  }
  w.end();
}

}  // namespace pmcached::server

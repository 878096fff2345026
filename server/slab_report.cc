#include "server/slab_report.h"

#include <string>

namespace pmcached::server {
namespace {

// "N:name" for `stats slabs`, "items:N:name" for `stats items`.
class ClassNames {
 public:
  ClassNames(std::string_view prefix, std::uint32_t id)
      : base_(std::string(prefix) + std::to_string(id) + ":") {}
  const std::string& operator()(std::string_view name) {
    full_.assign(base_).append(name);
    return full_;
  }

 private:
  std::string base_;
  std::string full_;
};

bool shown_in_slabs(const engine::SizeClassStats& c) {
  // memcached keeps a class's pages for good; here an emptied page is free again, so a class
  // that has served commands is shown even when it holds no page any more.
  return c.total_pages != 0 || c.get_hits != 0 || c.cmd_set != 0 || c.delete_hits != 0 ||
         c.incr_hits != 0 || c.decr_hits != 0 || c.cas_hits != 0 || c.cas_badval != 0 ||
         c.touch_hits != 0;
}

}  // namespace

void write_slab_classes(const engine::Store& store, protocol::ReplyWriter& w) {
  const engine::SlabStats stats = store.slab_stats();
  std::uint64_t active = 0;
  std::uint64_t pages = 0;
  for (const engine::SizeClassStats& c : stats.classes) {
    pages += c.total_pages;
    if (!shown_in_slabs(c)) continue;
    ++active;
    ClassNames n("", c.id);
    w.stat(n("chunk_size"), c.chunk_size);
    w.stat(n("chunks_per_page"), c.chunks_per_page);
    w.stat(n("total_pages"), c.total_pages);
    w.stat(n("total_chunks"), c.total_chunks);
    w.stat(n("used_chunks"), c.used_chunks);
    w.stat(n("free_chunks"), c.free_chunks);
    // memcached 1.6 carves a whole page at once, so its free_chunks_end is always 0; so here.
    w.stat(n("free_chunks_end"), std::uint64_t{0});
    w.stat(n("get_hits"), c.get_hits);
    w.stat(n("cmd_set"), c.cmd_set);
    w.stat(n("delete_hits"), c.delete_hits);
    w.stat(n("incr_hits"), c.incr_hits);
    w.stat(n("decr_hits"), c.decr_hits);
    w.stat(n("cas_hits"), c.cas_hits);
    w.stat(n("cas_badval"), c.cas_badval);
    w.stat(n("touch_hits"), c.touch_hits);
  }
  w.stat("active_slabs", active);
  w.stat("total_malloced", pages * stats.page_size);
}

void write_item_classes(const engine::Store& store, protocol::ReplyWriter& w) {
  for (const engine::SizeClassStats& c : store.slab_stats().classes) {
    if (c.number == 0) continue;
    ClassNames n("items:", c.id);
    w.stat(n("number"), c.number);
    w.stat(n("age"), c.age);
    w.stat(n("mem_requested"), c.mem_requested);
    w.stat(n("evicted"), c.evicted);
    w.stat(n("evicted_nonzero"), c.evicted_nonzero);
    w.stat(n("evicted_time"), c.evicted_time);
    w.stat(n("outofmemory"), c.outofmemory);
    w.stat(n("reclaimed"), c.reclaimed);
    w.stat(n("expired_unfetched"), c.expired_unfetched);
    w.stat(n("evicted_unfetched"), c.evicted_unfetched);
  }
}

}  // namespace pmcached::server

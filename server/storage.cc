#include "server/storage.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <map>
#include <string>
#include <system_error>

#include <spdlog/spdlog.h>

#include "engine/buffer/buffer_types.h"

namespace pmcached::server {

namespace {

// A paged engine's pool holds only its redo log and double-write buffer: the log's region, the
// buffer's slots (a little over kDoubleWriteBytes), their roots and the allocator's slack.
constexpr std::size_t kPagedPoolSlackMb = 4 + (buffer::kDoubleWriteBytes >> 20) + 1;

engine::PagedOptions paged_options(const config::Options& options) {
  engine::PagedOptions paged;
  paged.page_file = options.page_file;
  paged.page_size = options.page_size;
  paged.buffer_pool_bytes =
      (options.buffer_pool_mb != 0 ? options.buffer_pool_mb : options.memory_limit_mb) << 20;
  paged.page_file_bytes = static_cast<std::uint64_t>(options.page_file_mb) << 20;
  // config/ has checked both names.
  paged.page_table = buffer::parse_page_table(options.page_table).value_or(paged.page_table);
  paged.eviction = buffer::parse_eviction(options.eviction).value_or(paged.eviction);
  paged.log_bytes = options.log_mb << 20;
  paged.b2_threshold = options.b2_threshold;
  return paged;
}

pm::SlabSettings slab_settings(const config::Options& options) {
  pm::SlabSettings slabs;
  slabs.min_size = options.slab_min_size;
  slabs.growth_factor = options.slab_growth_factor;
  slabs.chunk_max = options.slab_chunk_max;
  return slabs;
}

// A reopened pool keeps the size classes it was made with, whatever -n, -f and -o say.
void log_slab_settings(const config::Options& options, const engine::Store& store) {
  const std::optional<pm::SlabSettings> used = store.slab_settings();
  const pm::SlabSettings asked = slab_settings(options);
  if (store.engine_capabilities().persistent && !used) {
    spdlog::info(
        "pool has layout 1: its size classes are the old 64 B .. 64 KiB ones, not "
        "memcached's (-n, -f and -o slab_chunk_max apply to new pools)");
  } else if (used && *used != asked) {
    spdlog::warn(
        "pool keeps the size classes it was made with (-n {} -f {} -o slab_chunk_max={}), "
        "not -n {} -f {} -o slab_chunk_max={}",
        used->min_size, used->growth_factor, used->chunk_max, asked.min_size, asked.growth_factor,
        asked.chunk_max);
  }
}

engine::StoreConfig store_config(const config::Options& options, const engine::EngineInfo* info) {
  engine::StoreConfig config;
  config.engine = options.engine;
  config.options.memory_limit_bytes = options.memory_limit_mb << 20;
  config.options.item_size_max = options.item_size_max;
  config.options.evict_when_full = !options.no_evict;
  config.options.slabs = slab_settings(options);
  config.pool_path = options.pool_path;
  config.pool_bytes = options.memory_limit_mb << 20;
  config.flush_instruction = options.pm_flush;
  config.write_latency_ns = options.pm_write_latency_ns;
  if (info != nullptr && info->create_records) {
    config.paged = paged_options(options);
    config.pool_bytes = (options.log_mb + kPagedPoolSlackMb) << 20;
  }
  return config;
}

// A pool in a directory that does not exist is refused, as a mistyped path should be; only
// the default pool's directory (data/) is created, so that a plain start works.
void prepare_pool_directory(const std::string& pool_path) {
  const std::filesystem::path parent = std::filesystem::path(pool_path).parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  if (std::filesystem::is_directory(parent, ec)) return;
  if (std::filesystem::exists(parent, ec)) {
    throw StorageError("--pool: '" + parent.string() + "' is not a directory");
  }
  if (pool_path != config::Options{}.pool_path) {
    throw StorageError("--pool: directory '" + parent.string() + "' does not exist");
  }
  std::filesystem::create_directories(parent, ec);
  if (ec) {
    throw StorageError("--pool: cannot create directory '" + parent.string() +
                       "': " + ec.message());
  }
  spdlog::info("created directory {} for the default pool", parent.string());
}

std::string user_name(uid_t uid) {
  const passwd* pw = ::getpwuid(uid);
  return pw != nullptr ? std::string(pw->pw_name) : "uid " + std::to_string(uid);
}

// A file this user cannot write (or, for a new file, a directory it cannot create files in) is
// refused in one line that names the user and the directory: the usual cause is a bind-mounted
// volume owned by another uid than the server runs as. Other errors are left to the open.
void check_write_access(const std::string& flag, const std::string& path) {
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  std::filesystem::path target = path;
  if (!exists) {
    target = std::filesystem::path(path).parent_path();
    if (target.empty()) target = ".";
  }
  if (::access(target.c_str(), exists ? R_OK | W_OK : W_OK | X_OK) == 0) return;
  const int error = errno;
  if (error != EACCES && error != EPERM && error != EROFS) return;
  const std::string what = exists ? "pool file " + path : "directory " + target.string();
  if (error == EROFS) {
    throw StorageError(flag + ": " + what + " is on a read-only file system");
  }
  struct stat st {};
  const std::string owner =
      ::stat(target.c_str(), &st) == 0
          ? " (owned by " + user_name(st.st_uid) + ", uid " + std::to_string(st.st_uid) + ")"
          : std::string();
  const uid_t uid = ::getuid();
  throw StorageError(flag + ": user " + user_name(uid) + " (uid " + std::to_string(uid) +
                     ") needs write access to " + what + owner + ", e.g. chown " +
                     std::to_string(uid) + " " + (exists ? path : target.string()));
}

// Logged once the pool is accepted: a refused one gets its one line and nothing else.
void log_opened(const engine::PmStats& pm, const engine::RecoveryReport& recovery) {
  spdlog::info("pool {}: {} MB, {}, {} pool, flush with {}{}", pm.pool_path, pm.pool_bytes >> 20,
               pm.real_pm ? "real PM (DAX)"
                          : "emulated PM (durable against process crashes; "
                            "against power loss only after a clean shutdown)",
               pm.opened_as, pm.flush_instruction,
               pm.write_latency_ns > 0
                   ? ", emulated write latency " + std::to_string(pm.write_latency_ns) + " ns"
                   : std::string());
  for (const std::string& problem : recovery.problems) spdlog::warn("recovery: {}", problem);
  spdlog::info("recovered {} items ({} bytes live, {} index blocks, {} dropped) in {} us",
               recovery.items_recovered, recovery.bytes_live, recovery.index_blocks,
               recovery.items_dropped, recovery.time_us);
}

// -m sizes a new pool only: an existing pool keeps the size it was created with (its superblock,
// allocator and mapping are fixed at that size), so a different -m on restart is said aloud.
void warn_if_pool_keeps_its_size(const config::Options& options, const engine::PmStats& pm) {
  const std::size_t asked = options.memory_limit_mb << 20;
  if (pm.opened_as == "new" || pm.pool_bytes == asked) return;
  spdlog::warn(
      "pool {} keeps its size of {} MB: -m {} applies only when a pool is created (a pool never "
      "grows or shrinks; to use {} MB, start on a new pool file)",
      pm.pool_path, pm.pool_bytes >> 20, options.memory_limit_mb, options.memory_limit_mb);
}

// A paged engine's files and buffer pool, from its `stats engine`.
void log_paged(const engine::Store& store) {
  std::map<std::string, std::string> s;
  for (engine::EngineStat& stat : store.engine_stats()) s[stat.name] = std::move(stat.value);
  const auto mb = [&](const std::string& pages) {
    return std::to_string(std::stoull(s[pages].empty() ? "0" : s[pages]) *
                              std::stoull(s["page_size"].empty() ? "0" : s["page_size"]) >>
                          20);
  };
  spdlog::info(
      "page file {}: {} of {} MB in use, {} B pages, {}; buffer pool {} MB ({} frames), "
      "page table {}, eviction {}; {} torn pages repaired, {} log units replayed",
      s["page_file"], mb("page_file_pages"), mb("page_file_max_pages"), s["page_size"],
      s["page_file_direct_io"] == "yes" ? "O_DIRECT" : "buffered I/O (no O_DIRECT here)",
      mb("buffer_frames"), s["buffer_frames"], s["page_table"], s["eviction"], s["pages_repaired"],
      s["log_units_replayed"]);
}

}  // namespace

std::unique_ptr<engine::OpenStore> open_storage(const config::Options& options,
                                                const engine::Clock& clock) {
  const engine::EngineInfo* info = engine::find_engine(options.engine);
  if (info != nullptr && info->persistent) {
    prepare_pool_directory(options.pool_path);
    check_write_access("--pool", options.pool_path);
    if (info->create_records) {
      check_write_access("--page-file", options.page_file.empty() ? options.pool_path + ".pages"
                                                                  : options.page_file);
    }
  }
  std::unique_ptr<engine::OpenStore> opened;
  try {
    opened = engine::open_store(store_config(options, info), clock);
  } catch (const engine::StoreOpenError& error) {
    throw StorageError(error.what());
  }
  if (const std::optional<engine::PmStats> pm = opened->pm_stats()) {
    log_opened(*pm, *opened->recovery());
    if (!info->create_records) warn_if_pool_keeps_its_size(options, *pm);
  }
  if (info != nullptr && info->create_records) log_paged(opened->store());
  if (info != nullptr && !info->create_records) log_slab_settings(options, opened->store());
  return opened;
}

}  // namespace pmcached::server

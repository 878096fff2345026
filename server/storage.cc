#include "server/storage.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <system_error>

#include "engine/pm/persistence.h"

namespace pmcached::server {

namespace {

// Item records may use this share of the pool's heap; the rest is for index nodes and the
// allocator's size-class slack, so eviction starts before allocations fail.
constexpr double kItemShareOfHeap = 0.85;

engine::StoreOptions store_options(const config::Options& options) {
  engine::StoreOptions out;
  out.memory_limit_bytes = options.memory_limit_mb << 20;
  out.item_size_max = options.item_size_max;
  out.evict_when_full = !options.no_evict;
  return out;
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

}  // namespace

Storage::Storage(const config::Options& options, const engine::Clock& clock)
    : info_(engine::find_engine(options.engine)) {
  if (info_ == nullptr) {
    throw StorageError("unknown engine '" + options.engine + "' (valid: " +
                       engine::engine_names() + ")");
  }
  if (!info_->persistent) {
    auto engine = info_->create(engine::EngineContext{engine::Store::key_of});
    store_ = std::make_unique<engine::Store>(std::move(engine), clock, store_options(options));
    return;
  }

  pm::PersistConfig persist;
  if (!pm::parse_flush_instruction(options.pm_flush, persist.flush)) {
    throw StorageError("--pm-flush: unknown instruction '" + options.pm_flush + "'");
  }
  persist.write_latency_ns = options.pm_write_latency_ns;
  const pm::FlushInstruction used = pm::configure(persist);

  prepare_pool_directory(options.pool_path);
  try {
    pool_ = pm::Pool::open_file(options.pool_path, options.memory_limit_mb << 20, info_->name);
  } catch (const pm::PoolError& error) {
    throw StorageError(error.what());
  }

  allocator_ =
      std::make_unique<pm::Allocator>(pool_->region(), pool_->heap_begin(), pool_->heap_end());
  heap_ = engine::make_pm_heap(*pool_, *allocator_);
  engine::EngineContext context;
  context.key_of = [heap = heap_.get()](engine::ItemRef ref) { return heap->key_of(ref); };
  context.pool = pool_.get();
  context.allocator = allocator_.get();

  engine::StoreOptions limits = store_options(options);
  limits.memory_limit_bytes = static_cast<std::size_t>(
      static_cast<double>(pool_->heap_end() - pool_->heap_begin()) * kItemShareOfHeap);
  std::unique_ptr<engine::IndexEngine> index;
  try {
    index = info_->create(context);
  } catch (const std::runtime_error& error) {
    const std::string what = error.what();
    throw StorageError(options.pool_path + ": " +
                       (what.starts_with("pool is corrupt") ? what : "pool is corrupt: " + what));
  }
  store_ = std::make_unique<engine::Store>(std::move(index), *heap_, clock, limits);

  // A new pool takes the same path: its heap simply has nothing reachable.
  try {
    recovery_ = store_->recover(*allocator_);
  } catch (const std::runtime_error& error) {
    throw StorageError(options.pool_path + ": " + error.what());
  }
  // Logged once the pool is accepted: a refused one gets its one line and nothing else.
  spdlog::info("pool {}: {} MB, {}, {} pool, flush with {}{}", options.pool_path,
               pool_->region().size() >> 20,
               pool_->region().is_pmem() ? "real PM (DAX)"
                                         : "emulated PM (durable against process crashes; "
                                           "against power loss only after a clean shutdown)",
               pool_->created() ? "new" : (pool_->was_clean() ? "cleanly closed" : "crashed"),
               pm::flush_instruction_name(used),
               persist.write_latency_ns > 0
                   ? ", emulated write latency " + std::to_string(persist.write_latency_ns) + " ns"
                   : std::string());
  for (const std::string& problem : recovery_->problems) spdlog::warn("recovery: {}", problem);
  spdlog::info("recovered {} items ({} bytes live, {} index blocks, {} dropped) in {} us",
               recovery_->items_recovered, recovery_->bytes_live, recovery_->index_blocks,
               recovery_->items_dropped, recovery_->time_us);
  pool_->mark_in_use();
}

Storage::~Storage() = default;

void Storage::close() {
  store_.reset();
  if (pool_) {
    pool_->mark_clean();
    spdlog::info("pool synced and marked clean");
  }
}

}  // namespace pmcached::server

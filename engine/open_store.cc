#include "engine/open_store.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "engine/pm/allocator.h"
#include "engine/pm/persistence.h"
#include "engine/pm/pm_region.h"
#include "engine/pm/pool.h"
#include "engine/store/item_heap.h"

namespace pmcached::engine {

StoreConfig::StoreConfig() = default;
StoreConfig::~StoreConfig() = default;
StoreConfig::StoreConfig(StoreConfig&&) noexcept = default;
StoreConfig& StoreConfig::operator=(StoreConfig&&) noexcept = default;

namespace {

class VolatileStore final : public OpenStore {
 public:
  VolatileStore(const EngineInfo& info, const Clock& clock, const StoreOptions& options)
      : info_(info), store_(std::make_unique<Store>(info.create, clock, options)) {}

  Store& store() noexcept override { return *store_; }
  const EngineInfo& engine_info() const noexcept override { return info_; }
  const std::optional<RecoveryReport>& recovery() const noexcept override { return recovery_; }
  std::optional<PmStats> pm_stats() const override { return std::nullopt; }
  pm::Pool* pool() const noexcept override { return nullptr; }
  pm::Allocator* allocator() const noexcept override { return nullptr; }
  void close() override { store_.reset(); }

 private:
  const EngineInfo& info_;
  std::unique_ptr<Store> store_;
  std::optional<RecoveryReport> recovery_;
};

class PersistentStore final : public OpenStore {
 public:
  PersistentStore(const EngineInfo& info, StoreConfig& config, const Clock& clock);

  Store& store() noexcept override { return *store_; }
  const EngineInfo& engine_info() const noexcept override { return info_; }
  const std::optional<RecoveryReport>& recovery() const noexcept override { return recovery_; }
  std::optional<PmStats> pm_stats() const override;
  pm::Pool* pool() const noexcept override { return pool_.get(); }
  pm::Allocator* allocator() const noexcept override { return allocator_.get(); }
  void close() override;

 private:
  // Makes the store over the opened pool and recovers it.
  void open_engine(StoreConfig& config, const Clock& clock, const std::string& where);

  const EngineInfo& info_;
  std::string pool_path_;
  std::string page_file_;  // a paged engine's
  std::uint32_t write_latency_ns_;
  std::unique_ptr<pm::Pool> pool_;
  std::unique_ptr<pm::Allocator> allocator_;
  std::unique_ptr<ItemHeap> heap_;
  std::unique_ptr<Store> store_;
  std::optional<RecoveryReport> recovery_;
};

PersistentStore::PersistentStore(const EngineInfo& info, StoreConfig& config, const Clock& clock)
    : info_(info),
      pool_path_(config.region ? std::string() : config.pool_path),
      write_latency_ns_(config.write_latency_ns) {
  const std::string where = config.region ? std::string("pool") : config.pool_path;
  try {
    const pm::SlabSettings& slabs = config.options.slabs;
    pool_ = config.region
                ? pm::Pool::open_region(std::move(config.region), info.name, slabs)
                : pm::Pool::open_file(config.pool_path, config.pool_bytes, info.name, slabs);
  } catch (const pm::PoolError& error) {
    throw StoreOpenError(error.what());
  }
  allocator_ = std::make_unique<pm::Allocator>(*pool_);
  try {
    open_engine(config, clock, where);
  } catch (...) {
    // A refused start leaves nothing behind: not even the pool file it has just created (a
    // paged engine may refuse its page file after the pool was made).
    if (pool_->created() && !pool_path_.empty()) {
      store_.reset();
      heap_.reset();
      allocator_.reset();
      pool_.reset();
      std::error_code ignored;
      std::filesystem::remove(pool_path_, ignored);
    }
    throw;
  }
  pool_->mark_in_use();
}

void PersistentStore::open_engine(StoreConfig& config, const Clock& clock,
                                  const std::string& where) {
  const EngineInfo& info = info_;
  StoreOptions options = config.options;
  try {
    if (info.create_records) {
      // A paged engine's items live on its page file; the pool holds its redo log.
      RecordEngineContext context{pool_.get(), allocator_.get(), config.paged};
      if (context.paged.page_file.empty()) {
        if (config.pool_path.empty()) throw StoreOpenError("a paged engine needs a page file");
        context.paged.page_file = config.pool_path + ".pages";
      }
      page_file_ = context.paged.page_file;
      options.memory_limit_bytes = static_cast<std::size_t>(context.paged.page_file_bytes);
      options.evict_when_full = false;
      store_ = std::make_unique<Store>(info.create_records, context, clock, options);
    } else {
      heap_ = make_pm_heap(*pool_, *allocator_);
      options.memory_limit_bytes = static_cast<std::size_t>(
          static_cast<double>(pool_->heap_end() - pool_->heap_begin()) * config.item_share_of_heap);
      store_ = std::make_unique<Store>(info.create, *heap_, clock, options);
    }
  } catch (const StoreOpenError&) {
    throw;
  } catch (const std::runtime_error& error) {
    const std::string what = error.what();
    if (info.create_records) throw StoreOpenError(what);  // names its own file
    throw StoreOpenError(where + ": " +
                         (what.starts_with("pool is corrupt") ? what : "pool is corrupt: " + what));
  }
  // A new pool takes the same path: its heap simply has nothing reachable.
  try {
    recovery_ = store_->recover();
  } catch (const std::runtime_error& error) {
    throw StoreOpenError(where + ": " + error.what());
  }
}

std::optional<PmStats> PersistentStore::pm_stats() const {
  PmStats out;
  out.pool_path = pool_path_;
  out.pool_bytes = pool_->region().size();
  out.real_pm = pool_->region().is_pmem();
  out.opened_as = pool_->created() ? "new" : (pool_->was_clean() ? "cleanly closed" : "crashed");
  out.flush_instruction = pm::flush_instruction_name(pm::active_flush_instruction());
  out.write_latency_ns = write_latency_ns_;
  const pm::AllocatorStats a = allocator_->stats();
  out.heap_bytes = a.heap_bytes;
  out.heap_bytes_in_use = a.bytes_in_use;
  out.heap_blocks_in_use = a.blocks_in_use;
  out.heap_chunks_in_use = a.chunks_in_use;
  out.heap_chunks_total = a.chunks_total;
  const pm::PersistTotals totals = pm::totals();
  for (std::size_t i = 0; i < totals.by_kind.size(); ++i) {
    const pm::OpCounters& c = totals.by_kind[i];
    out.persists.push_back(
        {pm::op_kind_name(static_cast<pm::OpKind>(i)), c.operations, c.lines_flushed, c.fences});
  }
  return out;
}

void PersistentStore::close() {
  if (!store_) return;
  store_->close();
  store_.reset();
  pool_->mark_clean();
}

}  // namespace

std::unique_ptr<OpenStore> open_store(StoreConfig config, const Clock& clock) {
  const EngineInfo* info = find_engine(config.engine);
  if (info == nullptr) {
    throw StoreOpenError("unknown engine '" + config.engine + "' (valid: " + engine_names() + ")");
  }
  if (!info->persistent) return std::make_unique<VolatileStore>(*info, clock, config.options);

  if (config.flush_instruction) {
    pm::PersistConfig persist;
    if (!pm::parse_flush_instruction(*config.flush_instruction, persist.flush)) {
      throw StoreOpenError("unknown flush instruction '" + *config.flush_instruction + "'");
    }
    persist.write_latency_ns = config.write_latency_ns;
    pm::configure(persist);
  }
  return std::make_unique<PersistentStore>(*info, config, clock);
}

}  // namespace pmcached::engine

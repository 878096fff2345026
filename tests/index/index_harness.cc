// Harness for the persistent index engine tests. See index_harness.h.
#include "tests/index/index_harness.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <set>
#include <utility>

#include "engine/engine_registry.h"
#include "engine/pm/persistence.h"

namespace pmcached::engine::testing {

std::vector<std::string> registered_of(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& name : names) {
    if (find_engine(name) != nullptr) out.push_back(name);
  }
  return out;
}

std::string numbered(std::string_view prefix, std::uint64_t n) {
  std::string s(prefix);
  s.append(std::to_string(n));
  return s;
}

std::string be64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 7; i >= 0; --i, v >>= 8) s[static_cast<std::size_t>(i)] = static_cast<char>(v);
  return s;
}

std::vector<std::string> shuffled_keys(std::size_t n, std::uint64_t seed) {
  std::vector<std::string> keys;
  for (std::uint64_t i = 1; i <= n; ++i) keys.push_back(be64(i * 0x9E3779B9ull));
  std::shuffle(keys.begin(), keys.end(), std::mt19937_64(seed));
  return keys;
}

CountingEngine::CountingEngine(const std::string& engine, std::vector<std::string> keys)
    : keys_(std::move(keys)) {
  EngineContext context;
  context.key_of = [this](ItemRef ref) -> std::string_view {
    ++reads_;
    return keys_[(ref / 16 - 1) % keys_.size()];
  };
  engine_ = find_engine(engine)->create(context);
}

Harness::Harness(std::string engine, std::size_t bytes, pm::CrashSimulator* simulator)
    : name_(std::move(engine)), inspect_(inspector_for(name_)) {
  // 256 KiB pages (the server's are memcached's 1 MiB): these pools are small (4 MiB for the crash
  // tests, whose simulator copies the pool at every crash point) and an engine needs a page per
  // node class in use.
  pm::SlabSettings slabs;
  slabs.page_size = 256u << 10;
  slabs.chunk_max = 128u << 10;
  pool_ = pm::Pool::open_region(pm::PmRegion::in_memory(bytes, simulator), name_, slabs);
  pool_->mark_in_use();  // as the server does once it serves from a pool
  allocator_ = std::make_unique<pm::Allocator>(*pool_);
  create_engine();
}

Harness::Harness(std::string engine, const std::vector<char>& image, pm::CrashSimulator* simulator)
    : name_(std::move(engine)), inspect_(inspector_for(name_)) {
  pool_ = pm::Pool::open_region(pm::PmRegion::from_image(image, simulator), name_);
  pool_->mark_in_use();
  allocator_ = std::make_unique<pm::Allocator>(*pool_);
  allocator_->begin_rebuild();
  create_engine();
  engine_->recover();
  engine_->for_each_block([&](std::uint64_t offset) {
    if (!allocator_->mark_reachable(offset, pm::BlockUse::kIndex)) {
      restart_problems_ += "node block " + std::to_string(offset) + " not markable; ";
    }
  });
  engine_->scan("", [&](std::string_view, ItemRef ref) {
    if (!allocator_->mark_reachable(ref)) {
      restart_problems_ += "item block " + std::to_string(ref) + " not markable; ";
    }
    return true;
  });
  allocator_->finish_rebuild();
}

void Harness::create_engine() {
  EngineContext context;
  const pm::PmRegion* r = &region();
  context.key_of = [r](ItemRef ref) { return item_key(*r, ref); };
  context.pool = pool_.get();
  context.allocator = allocator_.get();
  engine_ = find_engine(name_)->create(context);
}

ItemRef Harness::make_item(std::string_view key) {
  pm::OpScope scope(pm::OpKind::kItem);
  const std::uint64_t offset = allocator_->allocate(1 + key.size());
  if (offset == 0) return 0;
  auto* p = region().at<unsigned char>(offset);
  p[0] = static_cast<unsigned char>(key.size());
  std::memcpy(p + 1, key.data(), key.size());
  region().persist(p, 1 + key.size());
  return offset;
}

UpsertStatus Harness::put(std::string_view key, Model& model) {
  const ItemRef ref = make_item(key);
  if (ref == 0) return UpsertStatus::kOutOfMemory;
  const UpsertResult r = engine_->upsert(key, ref);
  if (r.status == UpsertStatus::kOutOfMemory) {
    free_item(ref);
    return r.status;
  }
  if (r.status == UpsertStatus::kReplaced) free_item(r.previous);
  model[std::string(key)] = ref;
  return r.status;
}

void Harness::put_batch(const std::vector<std::string>& keys, Model& model,
                        std::vector<ItemRef>& refs) {
  std::vector<BatchUpsert> batch;
  for (const std::string& key : keys) batch.push_back({key, make_item(key)});
  engine_->upsert_batch(batch);
  refs.clear();
  for (const BatchUpsert& entry : batch) {
    if (entry.result.status == UpsertStatus::kOutOfMemory) {
      free_item(entry.ref);
      refs.push_back(kNoItem);
      continue;
    }
    if (entry.result.status == UpsertStatus::kReplaced) free_item(entry.result.previous);
    model[std::string(entry.key)] = entry.ref;
    refs.push_back(entry.ref);
  }
}

bool Harness::del(std::string_view key, Model& model) {
  const ItemRef previous = engine_->erase(key);
  model.erase(std::string(key));
  if (previous == kNoItem) return false;
  free_item(previous);
  return true;
}

Model Harness::contents() {
  Model out;
  engine_->scan("", [&](std::string_view key, ItemRef ref) {
    out.emplace(std::string(key), ref);
    return true;
  });
  return out;
}

TreeReport Harness::inspect() {
  if (!inspect_) {
    TreeReport report;
    report.problems.push_back("no inspector for engine " + name_ + " (tests/index/inspectors.cc)");
    return report;
  }
  return inspect_(region(), pool_->root());
}

std::string Harness::check(bool accounting) {
  std::string out;
  const TreeReport report = inspect();
  for (const std::string& p : report.problems) out += p + "; ";
  if (engine_->size() != report.leaves.size()) {
    out += "size() " + std::to_string(engine_->size()) + " != leaves " +
           std::to_string(report.leaves.size()) + "; ";
  }
  for (const auto& [key, ref] : report.leaves) {
    if (engine_->lookup(key) != ref) out += "lookup misses a leaf; ";
  }
  std::vector<std::pair<std::string, ItemRef>> scanned;
  engine_->scan("", [&](std::string_view key, ItemRef ref) {
    scanned.emplace_back(std::string(key), ref);
    return true;
  });
  if (scanned != report.leaves) out += "scan differs from the inspector's leaves; ";
  std::multiset<std::uint64_t> blocks;
  engine_->for_each_block([&](std::uint64_t offset) { blocks.insert(offset); });
  std::multiset<std::uint64_t> nodes;
  for (const auto& [offset, bytes] : report.nodes) {
    nodes.insert(offset);
    if (allocator_->block_size(offset) != allocator_->rounded_size(bytes, pm::BlockUse::kIndex)) {
      out += "node " + std::to_string(offset) + " sits in a block of " +
             std::to_string(allocator_->block_size(offset)) + " bytes, not its layout's class; ";
    }
  }
  if (blocks != nodes) out += "for_each_block is not the node set, each once; ";
  if (accounting) {
    std::uint64_t expected = 0;
    for (const auto& node : report.nodes) expected += allocator_->block_size(node.first);
    for (const auto& leaf : report.leaves) expected += allocator_->block_size(leaf.second);
    const std::uint64_t in_use = allocator_->stats().bytes_in_use;
    if (in_use != expected) {
      out += "allocator bytes_in_use " + std::to_string(in_use) + " != nodes + items " +
             std::to_string(expected) + "; ";
    }
  }
  return out;
}

}  // namespace pmcached::engine::testing

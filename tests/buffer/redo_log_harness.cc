#include "tests/buffer/redo_log_harness.h"

#include <gtest/gtest.h>

namespace pmcached::buffer::testing {
namespace {

constexpr std::string_view kEngine = "redo-log-test";

}  // namespace

std::vector<LogRecord> views(const Records& records) {
  std::vector<LogRecord> out;
  for (const auto& [type, body] : records) {
    out.push_back({type, std::as_bytes(std::span(body.data(), body.size()))});
  }
  return out;
}

Records make_records(std::uint32_t tag, const std::vector<std::size_t>& sizes) {
  Records out;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::string body(sizes[i], '\0');
    for (std::size_t b = 0; b < body.size(); ++b) {
      body[b] = static_cast<char>('a' + (tag * 7 + i * 3 + b) % 26);
    }
    out.emplace_back(static_cast<std::uint16_t>(tag * 16 + i), std::move(body));
  }
  return out;
}

LogInstance LogInstance::fresh(std::size_t log_bytes, pm::CrashSimulator* sim) {
  LogInstance out;
  out.pool = pm::Pool::open_region(pm::PmRegion::in_memory(kPoolBytes, sim), kEngine);
  out.allocator = std::make_unique<pm::Allocator>(*out.pool);
  out.log = RedoLog::create(*out.pool, *out.allocator, log_bytes, kPageFileId);
  return out;
}

LogInstance LogInstance::restart(const std::vector<char>& image, std::uint64_t root,
                                 pm::CrashSimulator* sim) {
  LogInstance out;
  out.pool = pm::Pool::open_region(pm::PmRegion::from_image(image, sim), kEngine);
  out.allocator = std::make_unique<pm::Allocator>(*out.pool);
  out.log = RedoLog::open(*out.pool, root, kPageFileId);
  out.allocator->begin_rebuild();
  int blocks = 0;
  out.log->for_each_block([&](std::uint64_t offset) {
    ++blocks;
    if (!out.allocator->mark_reachable(offset, pm::BlockUse::kIndex)) {
      ADD_FAILURE() << "the log's block at " << offset << " is not a block of the heap";
    }
  });
  out.allocator->finish_rebuild();
  EXPECT_EQ(blocks, 2);
  EXPECT_EQ(out.allocator->stats().blocks_in_use, 2u);
  return out;
}

Unit LogInstance::append(const Records& records) {
  const std::vector<LogRecord> v = views(records);
  Lsn end = log->append(v);
  if (end == 0) {
    log->checkpoint(log->durable_lsn());
    end = log->append(v);
  }
  return {end, records};
}

std::vector<Unit> LogInstance::replay() {
  std::vector<Unit> out;
  log->replay([&](Lsn end, std::span<const LogRecord> records) {
    Unit unit{end, {}};
    for (const LogRecord& r : records) {
      unit.records.emplace_back(
          r.type, std::string(reinterpret_cast<const char*>(r.body.data()), r.body.size()));
    }
    out.push_back(std::move(unit));
  });
  return out;
}

std::vector<char> LogInstance::memory() const {
  const pm::PmRegion& region = pool->region();
  return {region.base(), region.base() + region.size()};
}

}  // namespace pmcached::buffer::testing

// SetBatch: group commit of one worker's sets (issue 16; docs/TAIL_LATENCY.md, "What group
// commit would have to be on x86"). The sets (text `set`, binary SET/SETQ, `ms`;
// CommandExecutor::defer_set says which) that the worker's connections parse in one
// turn of its event loop wait here, and a handler posted behind the turn's other handlers stores
// them together (engine::Store::store_batch: on wort, woart and artcow one wait for the
// write-backs of all their records and one for all their index references, instead of two per
// set; on those and on dram one hold of their stripes and the recency lists' cache misses
// overlapped). Then each connection gets its outcomes, replies and parses on. A connection's
// waiting sets are the run of sets its input holds (a pipeline's, up to
// Connection::kMaxWaitingSets); the first command after them waits, parsed, until they are all
// stored, so its commands keep their order and no reply precedes durability.
//
// Thread safety: one per worker, used on that worker's thread only.
#pragma once

#include <memory>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "engine/store/store.h"

namespace pmcached::server {

class Connection;

class SetBatch {
 public:
  SetBatch(engine::Store& store, boost::asio::io_context& io) : store_(store), io_(io) {}

  // Whether sets should wait here: the store stores in groups.
  [[nodiscard]] bool enabled() const noexcept { return store_.stores_in_groups(); }

  // Queues `connection`'s set; the batch later calls connection->finish_set(outcome), for each
  // connection's sets in the order they were added. The request's key and value must stay where
  // they are until then.
  void add(std::shared_ptr<Connection> connection, const engine::StoreRequest& request);

 private:
  void run();

  engine::Store& store_;
  boost::asio::io_context& io_;
  bool posted_ = false;
  std::vector<std::shared_ptr<Connection>> waiting_;
  std::vector<engine::StoreRequest> requests_;
  // The batch being finished (connections that set again go to waiting_, the next batch).
  std::vector<std::shared_ptr<Connection>> finishing_;
  std::vector<engine::StoreOutcome> outcomes_;
};

}  // namespace pmcached::server

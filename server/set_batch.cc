#include "server/set_batch.h"

#include <utility>

#include <boost/asio/post.hpp>

#include "server/connection.h"

namespace pmcached::server {

void SetBatch::add(std::shared_ptr<Connection> connection, const engine::StoreRequest& request) {
  waiting_.push_back(std::move(connection));
  requests_.push_back(request);
  if (posted_) return;
  posted_ = true;
  // Behind the handlers already queued on this worker: the rest of the turn's reads.
  boost::asio::post(io_, [this] { run(); });
}

void SetBatch::run() {
  posted_ = false;
  outcomes_.assign(requests_.size(), engine::StoreOutcome{});
  store_.store_batch(requests_, outcomes_);
  requests_.clear();
  finishing_.swap(waiting_);
  for (std::size_t i = 0; i < finishing_.size(); ++i) finishing_[i]->finish_set(outcomes_[i]);
  finishing_.clear();
}

}  // namespace pmcached::server

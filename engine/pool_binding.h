// PoolBinding: the pool and allocator a persistent engine works in — the ones its EngineContext
// names, or, when it names none (the engine-agnostic unit tests), a private in-memory pool.
//
// Thread safety: immutable after construction; the pool and allocator have their own rules.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "engine/engine_context.h"
#include "engine/pm/allocator.h"
#include "engine/pm/pool.h"

namespace pmcached::engine {

class PoolBinding {
 public:
  static constexpr std::size_t kPrivatePoolBytes = 32u << 20;

  PoolBinding(const EngineContext& context, std::string_view engine_name)
      : pool_(context.pool), allocator_(context.allocator) {
    if (pool_ == nullptr || allocator_ == nullptr) {
      own_pool_ = pm::Pool::open_region(pm::PmRegion::in_memory(kPrivatePoolBytes), engine_name);
      own_allocator_ = std::make_unique<pm::Allocator>(*own_pool_);
      pool_ = own_pool_.get();
      allocator_ = own_allocator_.get();
    }
  }
  [[nodiscard]] pm::Pool& pool() const noexcept { return *pool_; }
  [[nodiscard]] pm::Allocator& allocator() const noexcept { return *allocator_; }

 private:
  std::unique_ptr<pm::Pool> own_pool_;
  std::unique_ptr<pm::Allocator> own_allocator_;
  pm::Pool* pool_;
  pm::Allocator* allocator_;
};

}  // namespace pmcached::engine

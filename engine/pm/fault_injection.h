// TEST ONLY: the one seam through which tests break a persistence order on purpose, so that
// the crash tests can show the crash simulator catches a broken engine or store (and make a
// reservation fail as on a full file system). Every fault is
// off unless a test turns it on with a FaultScope; nothing outside tests does.
//
// Thread safety: none. Turn faults on and off only while no other thread works on a pool.
#pragma once

namespace pmcached::pm {

enum class Fault : unsigned {
  // Index engines (the radix trees, the B-trees): nodes they build are not flushed before the
  // store that publishes them.
  kSkipNewNodeFlush = 1u << 0,
  // The store: records are published without being handed over for persistence first.
  kSkipRecordPersist = 1u << 1,
  // PmRegion::store_u64_persist skips its publishing-order fence, so a reference can persist
  // before the record handed over with flush_before_publish.
  kSkipPublishOrder = 1u << 2,
  // PmRegion::reserve fails with ENOSPC (a full file system), on any region.
  kReserveFails = 1u << 3,
  // buffer::PageFile::sync's fdatasync fails with EIO (a device that lost a write).
  kSyncFails = 1u << 4,
};

class FaultInjection {
 public:
  [[nodiscard]] static bool active(Fault fault) noexcept {
    return (faults_ & static_cast<unsigned>(fault)) != 0;
  }

 private:
  friend class FaultScope;
  static inline unsigned faults_ = 0;
};

// Turns `fault` on for its lifetime.
class FaultScope {
 public:
  explicit FaultScope(Fault fault) noexcept : bit_(static_cast<unsigned>(fault)) {
    FaultInjection::faults_ |= bit_;
  }
  ~FaultScope() { FaultInjection::faults_ &= ~bit_; }
  FaultScope(const FaultScope&) = delete;
  FaultScope& operator=(const FaultScope&) = delete;

 private:
  unsigned bit_;
};

}  // namespace pmcached::pm

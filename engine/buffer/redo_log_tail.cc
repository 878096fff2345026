// RedoLogTail: reservations in LSN order, the contiguous written LSN, and the space in use.
//
// Why a short mutex rather than one fetch_add on the end LSN: a reservation is a decision, not a
// blind increment — it must check the free space against the checkpoint (and fail without
// moving the end) and may put a padding unit in front — and finishing a unit must advance the
// written LSN over units that finished out of order, which needs the list of pending ones. Both
// critical sections are a few dozen instructions; the copy and checksum of the unit (the real
// work) and the flush run outside them. A CAS loop could replace reserve()'s lock, but finish()
// would still need one, and on two cores the lock is never the bottleneck next to a flush.
#include "engine/buffer/redo_log_tail.h"

#include <algorithm>
#include <utility>

#include "engine/buffer/redo_log_format.h"

namespace pmcached::buffer {

void RedoLogTail::reset(Lsn end, Lsn checkpoint, std::vector<Lsn> skips) {
  std::lock_guard lock(mutex_);
  pending_.clear();
  skips_ = std::move(skips);
  skipped_.store(size_ * skips_.size(), std::memory_order_relaxed);
  checkpoint_.store(checkpoint, std::memory_order_release);
  end_.store(end, std::memory_order_release);
  written_.store(end, std::memory_order_release);
}

std::optional<RedoLogTail::Reservation> RedoLogTail::reserve(std::uint64_t length) {
  std::lock_guard lock(mutex_);
  const Lsn start = end_.load(std::memory_order_relaxed);
  const std::uint64_t room = size_ - start % size_;
  const std::uint64_t padding = room < length ? room : 0;
  const Lsn end = start + padding + length;
  const Lsn in_use =
      end - checkpoint_.load(std::memory_order_relaxed) - skipped_.load(std::memory_order_relaxed);
  if (in_use > size_) return std::nullopt;
  pending_.push_back({end, false});
  end_.store(end, std::memory_order_release);
  return Reservation{start, padding, start + padding, end, first_ticket_ + pending_.size() - 1};
}

void RedoLogTail::finish(std::uint64_t ticket) {
  bool advanced = false;
  {
    std::lock_guard lock(mutex_);
    pending_[ticket - first_ticket_].done = true;
    Lsn written = 0;
    while (!pending_.empty() && pending_.front().done) {
      written = pending_.front().end;
      pending_.pop_front();
      ++first_ticket_;
      advanced = true;
    }
    if (advanced) written_.store(written, std::memory_order_release);
  }
  if (advanced) written_.notify_all();
}

void RedoLogTail::wait_written(Lsn lsn) const noexcept {
  Lsn written = written_.load(std::memory_order_acquire);
  while (written < lsn) {
    written_.wait(written, std::memory_order_acquire);
    written = written_.load(std::memory_order_acquire);
  }
}

std::uint64_t RedoLogTail::used() const noexcept {
  std::lock_guard lock(mutex_);
  return end_.load(std::memory_order_relaxed) - checkpoint_.load(std::memory_order_relaxed) -
         skipped_.load(std::memory_order_relaxed);
}

bool RedoLogTail::valid_checkpoint(Lsn lsn, Lsn limit) const {
  std::lock_guard lock(mutex_);
  if (lsn < checkpoint_.load(std::memory_order_relaxed) || lsn > limit) return false;
  return std::none_of(skips_.begin(), skips_.end(), [&](Lsn skip) {
    return lsn > skip && lsn < skip + redo::kUnitHeaderSize + size_;
  });
}

void RedoLogTail::set_checkpoint(Lsn lsn) {
  std::lock_guard lock(mutex_);
  std::erase_if(skips_, [&](Lsn skip) { return skip < lsn; });
  skipped_.store(size_ * skips_.size(), std::memory_order_relaxed);
  checkpoint_.store(lsn, std::memory_order_release);
}

}  // namespace pmcached::buffer

// CrashSimulator: test support that knows what had reached persistence at every moment.
//
// Attached to an in-memory PmRegion, it keeps beside the working memory an IMAGE of the
// persistent state: a flushed line is captured (its content at flush time) and enters the
// image at the next fence; the k-th fence is persistence point k. crash_at(k) makes the
// simulator snapshot the image right after point k; restarting from that snapshot
// (PmRegion::from_image) is a crash at point k.
//
// In adversarial mode the crash happens WHILE fence k drains instead: the snapshot is the image
// of point k-1 plus a random subset of every line that differs from it — lines flushed since
// (their write-backs may or may not have completed) and lines written but never flushed (a cache
// eviction can persist any store early). Nothing orders those lines among themselves, so code
// that publishes a store before a fence has ordered what it points to is caught, and so is code
// that relies on a store NOT reaching PM. The operation that issued fence k is the one in flight.
//
// Thread safety: single-threaded (crash tests run one workload thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace pmcached::pm {

class CrashSimulator {
 public:
  explicit CrashSimulator(std::size_t region_size);

  // Called by PmRegion. The working memory's content at attach time is taken as persisted
  // (zeros for a new region, the crash image for a restart).
  void attach(const char* working_memory) noexcept;
  void on_flush(std::size_t offset, std::size_t len);
  void on_fence();

  // Snapshot right after persistence point `point` (1-based) or, `adversarial`, while it drains:
  // the image before it plus each line that differs from that image with probability 1/2,
  // drawn from `seed`.
  void crash_at(std::uint64_t point, bool adversarial = false, std::uint64_t seed = 1);

  // The last persistence point the crash image is sure to hold: the crash point, or the one
  // before it for an adversarial crash (which falls while the crash point's fence drains).
  // An operation that ended at or before it is done; one that began before the crash point and
  // ended at or after it was in flight.
  [[nodiscard]] std::uint64_t durable_point() const noexcept {
    return adversarial_ ? crash_point_ - 1 : crash_point_;
  }

  // Persistence points so far: every fence is one, even one with nothing pending.
  [[nodiscard]] std::uint64_t persistence_points() const noexcept { return points_; }
  // The snapshot taken at the crash point, if it was reached.
  [[nodiscard]] const std::optional<std::vector<char>>& crash_image() const noexcept {
    return crash_image_;
  }
  [[nodiscard]] std::size_t region_size() const noexcept { return image_.size(); }
  // The current persisted image (as if the crash happened now).
  [[nodiscard]] const std::vector<char>& image() const noexcept { return image_; }

 private:
  [[nodiscard]] std::vector<char> adversarial_snapshot() const;

  const char* working_ = nullptr;
  std::vector<char> image_;
  std::unordered_map<std::size_t, std::vector<char>> pending_;  // line offset -> content
  std::uint64_t points_ = 0;
  std::uint64_t crash_point_ = 0;  // 0 = none
  bool adversarial_ = false;
  std::uint64_t seed_ = 1;
  std::optional<std::vector<char>> crash_image_;
};

}  // namespace pmcached::pm

// CrashSimulator: test support that knows what had reached persistence at every moment.
//
// Attached to an in-memory PmRegion, it keeps beside the working memory an IMAGE of the
// persistent state: a flushed line is captured (its content at flush time) and enters the
// image at the next fence; the k-th fence is persistence point k. crash_at(k) makes the
// simulator snapshot the image right after point k; restarting from that snapshot
// (PmRegion::from_image) is a crash at point k. In adversarial mode the snapshot also takes
// a random subset of the lines that were written but never flushed (a cache eviction can
// persist any store early): code that relies on a store NOT reaching PM is caught too.
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

  // Snapshot right after persistence point `point` (1-based). `adversarial` adds each dirty,
  // unflushed line to the snapshot with probability 1/2, drawn from `seed`.
  void crash_at(std::uint64_t point, bool adversarial = false, std::uint64_t seed = 1);

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

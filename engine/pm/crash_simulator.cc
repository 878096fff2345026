// The crash simulator: a persisted image beside the working memory, fed by flushes and fences.
#include "engine/pm/crash_simulator.h"

#include <algorithm>
#include <cstring>

#include "engine/pm/persistence.h"

namespace pmcached::pm {
namespace {

// splitmix64: a small deterministic generator, so a seed always picks the same lines.
std::uint64_t next_random(std::uint64_t& state) noexcept {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

CrashSimulator::CrashSimulator(std::size_t region_size) : image_(region_size, 0) {}

void CrashSimulator::attach(const char* working_memory) noexcept {
  working_ = working_memory;
  std::memcpy(image_.data(), working_memory, image_.size());
}

void CrashSimulator::on_flush(std::size_t offset, std::size_t len) {
  if (len == 0) return;
  const std::size_t size = image_.size();
  const std::size_t end = std::min(offset + len, size);
  for (std::size_t line = offset & ~(kCacheLine - 1); line < end; line += kCacheLine) {
    const std::size_t n = std::min(kCacheLine, size - line);
    std::vector<char>& content = pending_[line];
    content.assign(working_ + line, working_ + line + n);
  }
}

void CrashSimulator::on_fence() {
  ++points_;
  const bool crash_here = points_ == crash_point_;
  // The adversarial crash falls before this fence has drained what it orders.
  if (crash_here && adversarial_) crash_image_ = adversarial_snapshot();
  for (const auto& [line, content] : pending_) {
    std::memcpy(image_.data() + line, content.data(), content.size());
  }
  pending_.clear();
  if (crash_here && !adversarial_) crash_image_ = image_;
}

std::vector<char> CrashSimulator::adversarial_snapshot() const {
  // Any line written since the last fence — flushed or merely dirty — may have reached PM:
  // take each with p = 1/2.
  std::uint64_t state = seed_;
  std::vector<char> snapshot = image_;
  for (std::size_t line = 0; line < image_.size(); line += kCacheLine) {
    const std::size_t n = std::min(kCacheLine, image_.size() - line);
    if (std::memcmp(working_ + line, image_.data() + line, n) == 0) continue;
    if ((next_random(state) & 1) != 0) std::memcpy(snapshot.data() + line, working_ + line, n);
  }
  return snapshot;
}

void CrashSimulator::crash_at(std::uint64_t point, bool adversarial, std::uint64_t seed) {
  crash_point_ = point;
  adversarial_ = adversarial;
  seed_ = seed;
  crash_image_.reset();
}

}  // namespace pmcached::pm

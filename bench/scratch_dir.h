// ScratchDir: a fresh directory for a benchmark's page files, removed with everything in it when
// the ScratchDir goes. In /dev/shm (tmpfs) where there is one, else in /tmp: the buffer
// benchmarks measure the buffer manager, not a disk.
//
// Thread safety: none of its own; path() may be read from any thread.
#pragma once

#include <string>

namespace pmcached::bench {

class ScratchDir {
 public:
  // Under `parent`, or /dev/shm (/tmp without it) if `parent` is empty. Throws std::runtime_error
  // if the directory cannot be made.
  explicit ScratchDir(const std::string& parent = {});
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

}  // namespace pmcached::bench

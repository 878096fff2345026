#include "engine/buffer/direct_open.h"

#include <fcntl.h>

#include <cerrno>

namespace pmcached::buffer {
namespace {

int system_open(const char* path, int flags, mode_t mode) { return ::open(path, flags, mode); }

}  // namespace

OpenedFile open_direct_or_buffered(const std::string& path, int flags, mode_t mode, bool try_direct,
                                   OpenCall call) {
  if (call == nullptr) call = &system_open;
  if (try_direct) {
    const int fd = call(path.c_str(), flags | O_DIRECT, mode);
    if (fd >= 0) return {fd, true};
    if (errno != EINVAL) return {-1, false};
  }
  return {call(path.c_str(), flags, mode), false};
}

}  // namespace pmcached::buffer

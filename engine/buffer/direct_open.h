// open_direct_or_buffered(): open(2) with O_DIRECT where the file system accepts it.
//
// A file system without O_DIRECT (tmpfs before Linux 6.6, some overlay and FUSE file systems)
// fails open(O_DIRECT) with EINVAL; the file is then opened without it and `direct` says so.
// The open call is a parameter so that tests can play such a file system.
//
// Thread safety: a free function; no state.
#pragma once

#include <sys/types.h>

#include <string>

#include "engine/buffer/page_file.h"

namespace pmcached::buffer {

using OpenCall = decltype(PageFileOptions::open_call);

struct OpenedFile {
  int fd = -1;  // -1: open failed, errno says why
  bool direct = false;
};

// Opens `path` with `flags`, adding O_DIRECT first if `try_direct`.
[[nodiscard]] OpenedFile open_direct_or_buffered(const std::string& path, int flags, mode_t mode,
                                                 bool try_direct, OpenCall call = nullptr);

}  // namespace pmcached::buffer

// PageFile: the file of fixed-size pages under a buffer manager (--page-file, --page-size,
// --page-file-mb).
//
// Page 0 is the file's header: magic "PMCPAGES", layout version, page size, a random 64-bit file
// id (the redo log in the pool records it, so a page file from another pool is refused), and a
// checksum. Pages 1.. belong to the engine. The file grows one extent at a time up to its
// maximum; extend() past it fails (the engine answers out of memory).
//
// I/O is O_DIRECT where the file system accepts it, so the kernel's page cache does not hide
// buffer-pool misses; where it does not (tmpfs, some overlay file systems) the file is opened
// without it and direct_io() says so (the server logs it). Buffers passed to read()/write() must
// be aligned to kIoAlignment.
//
// Opening a file whose header is foreign, of another layout version or page size, truncated (not
// a whole number of pages, or shorter than the header says), or corrupt throws PageFileError with
// one line naming the file and what is wrong, and leaves the file untouched.
//
// Thread safety: read() and write() of different pages may run concurrently (pread/pwrite);
// extend() and sync() may run concurrently with them.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "engine/buffer/buffer_types.h"

namespace pmcached::buffer {

class PageFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr std::size_t kIoAlignment = 4096;

struct PageFileOptions {
  std::string path;
  std::size_t page_size = kDefaultPageSize;
  std::uint64_t max_bytes = 1ull << 30;  // --page-file-mb
  bool direct_io = true;                 // try O_DIRECT (tests may turn it off)
  // open(2) by default; tests pass one that plays a file system without O_DIRECT.
  int (*open_call)(const char* path, int flags, mode_t mode) = nullptr;
};

class PageFile {
 public:
  // Opens `options.path`, creating it (header page only) if it does not exist.
  static std::unique_ptr<PageFile> open(const PageFileOptions& options);
  ~PageFile();
  PageFile(const PageFile&) = delete;
  PageFile& operator=(const PageFile&) = delete;

  [[nodiscard]] const std::string& path() const noexcept;
  [[nodiscard]] std::size_t page_size() const noexcept;
  [[nodiscard]] std::uint64_t file_id() const noexcept;
  [[nodiscard]] bool created() const noexcept;    // made by this open()
  [[nodiscard]] bool direct_io() const noexcept;  // O_DIRECT in use
  // Pages the file holds, header included: valid engine pages are 1 .. page_count() - 1.
  [[nodiscard]] PageId page_count() const noexcept;
  [[nodiscard]] PageId max_pages() const noexcept;

  // Grows the file so that it holds at least `pages` pages (zero-filled), one extent (1 MiB) at
  // a time. False if that would pass the maximum size, or the file system is full (nothing
  // changes).
  [[nodiscard]] bool extend(PageId pages);

  // Whole-page I/O; `id` must be below page_count(). Throw PageFileError on an I/O error.
  void read(PageId id, std::byte* out) const;
  void write(PageId id, const std::byte* in);
  // fdatasync: every completed write() and extend() is durable (the header then records the
  // new page count, so a file cut shorter later is refused as truncated). Throws PageFileError
  // if it fails, and from then on at every call: a failed fdatasync may have lost writes that a
  // retry would report as durable.
  void sync();

  // Counters for `stats engine`.
  [[nodiscard]] std::uint64_t reads() const noexcept;
  [[nodiscard]] std::uint64_t writes() const noexcept;
  [[nodiscard]] std::uint64_t syncs() const noexcept;

 private:
  struct Impl;
  explicit PageFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pmcached::buffer

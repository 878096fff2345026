// PageFile: the header page (layout version 1), O_DIRECT with a buffered fallback, growth by
// extents, and whole-page I/O.
#include "engine/buffer/page_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>

#include <xxhash.h>

#include "engine/buffer/aligned_buffer.h"
#include "engine/buffer/direct_open.h"
#include "engine/pm/fault_injection.h"

namespace pmcached::buffer {
namespace {

constexpr char kMagic[8] = {'P', 'M', 'C', 'P', 'A', 'G', 'E', 'S'};
// 2: page checksums are XXH3-64's low 32 bits (page_checksum.h); 1: XXH32.
constexpr std::uint32_t kLayoutVersion = 2;
constexpr std::uint64_t kExtentBytes = 1u << 20;  // growth step: 16 to 256 pages

// The first bytes of page 0; the rest of the page is zero.
struct FileHeader {
  char magic[8];                 // "PMCPAGES"
  std::uint32_t layout_version;  // kLayoutVersion
  std::uint32_t page_size;
  std::uint64_t file_id;     // random, never 0; the redo log records it
  std::uint64_t page_count;  // pages at the last sync(): the file may be longer, never shorter
  std::uint64_t checksum;    // XXH64 of the bytes before it
};
static_assert(sizeof(FileHeader) == 40);
static_assert(offsetof(FileHeader, checksum) == 32);

std::uint64_t checksum_of(const FileHeader& h) noexcept {
  return XXH64(&h, offsetof(FileHeader, checksum), 0);
}

bool valid_page_size(std::size_t size) noexcept {
  return size >= kMinPageSize && size <= kMaxPageSize && (size & (size - 1)) == 0;
}

std::uint64_t random_file_id() {
  std::random_device device;
  std::uint64_t id = 0;
  while (id == 0) id = (std::uint64_t{device()} << 32) | device();
  return id;
}

[[noreturn]] void fail(const std::string& what, int error) {
  throw PageFileError(what + ": " + std::strerror(error));
}

// Whole-buffer pread/pwrite: retries interrupted and partial transfers.
void read_all(int fd, std::byte* out, std::size_t n, off_t at, const std::string& what) {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd, out + done, n - done, at + static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail("cannot read " + what, errno);
    if (r == 0) throw PageFileError("cannot read " + what + ": unexpected end of file");
    done += static_cast<std::size_t>(r);
  }
}

void write_all(int fd, const std::byte* in, std::size_t n, off_t at, const std::string& what) {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pwrite(fd, in + done, n - done, at + static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail("cannot write " + what, errno);
    done += static_cast<std::size_t>(r);
  }
}

void sync_fd(int fd, const std::string& what) {
  if (pm::FaultInjection::active(pm::Fault::kSyncFails)) fail("cannot sync " + what, EIO);
  while (::fdatasync(fd) != 0) {
    if (errno != EINTR) fail("cannot sync " + what, errno);
  }
}

void sync_directory_of(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("cannot open directory " + dir, errno);
  const int r = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  if (r != 0) fail("cannot sync directory " + dir, error);
}

}  // namespace

struct PageFile::Impl {
  std::string path;
  std::string name;  // "page file PATH", the subject of every message
  std::size_t page_size = 0;
  std::uint64_t file_id = 0;
  bool created = false;
  bool direct = false;
  int fd = -1;
  PageId max_pages = 0;
  std::atomic<PageId> page_count{0};
  std::mutex grow_mutex;  // extend() and the header update in sync()
  PageId header_count = 0;
  std::atomic<std::uint64_t> reads{0}, writes{0}, syncs{0};
  // Set by the first fdatasync that failed: see sync().
  std::atomic<bool> sync_failed{false};

  ~Impl() {
    if (fd >= 0) ::close(fd);
  }

  off_t offset_of(PageId id) const noexcept { return static_cast<off_t>(id * page_size); }

  // Writes the header page with `count` pages (whole page on creation, else its first block).
  void write_header(PageId count, bool whole_page) {
    AlignedBuffer page(whole_page ? page_size : kIoAlignment);
    FileHeader h{};
    std::memcpy(h.magic, kMagic, sizeof(kMagic));
    h.layout_version = kLayoutVersion;
    h.page_size = static_cast<std::uint32_t>(page_size);
    h.file_id = file_id;
    h.page_count = count;
    h.checksum = checksum_of(h);
    std::memcpy(page.data(), &h, sizeof(h));
    write_all(fd, page.data(), page.size(), 0, name + " header");
  }

  void create(const PageFileOptions& options);
  void open_existing(const PageFileOptions& options, std::uint64_t size);
};

// A new file is written under a temporary name and renamed into place once its header is
// durable, so a crash while creating never leaves a half-made file at `path`.
void PageFile::Impl::create(const PageFileOptions& options) {
  const std::string temp = path + ".new";
  const OpenedFile opened = open_direct_or_buffered(temp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC,
                                                    0600, options.direct_io, options.open_call);
  if (opened.fd < 0) fail("cannot create " + name, errno);
  fd = opened.fd;
  direct = opened.direct;
  created = true;
  file_id = random_file_id();
  write_header(1, true);
  sync_fd(fd, name);
  if (::rename(temp.c_str(), path.c_str()) != 0) fail("cannot create " + name, errno);
  sync_directory_of(path);
  page_count.store(1);
  header_count = 1;
}

void PageFile::Impl::open_existing(const PageFileOptions& options, std::uint64_t size) {
  if (size < kMinPageSize) {
    throw PageFileError(name + " is truncated or not a pmcached page file (" +
                        std::to_string(size) + " bytes)");
  }
  OpenedFile opened =
      open_direct_or_buffered(path, O_RDWR | O_CLOEXEC, 0, options.direct_io, options.open_call);
  if (opened.fd < 0) fail("cannot open " + name, errno);
  fd = opened.fd;
  direct = opened.direct;
  AlignedBuffer block(kIoAlignment);
  read_all(fd, block.data(), block.size(), 0, name + " header");
  FileHeader h;
  std::memcpy(&h, block.data(), sizeof(h));
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0) {
    throw PageFileError(name + " is not a pmcached page file");
  }
  // The version before the checksum: another layout version may checksum differently.
  if (h.layout_version != kLayoutVersion) {
    throw PageFileError(name + " has layout version " + std::to_string(h.layout_version) +
                        ", this pmcached reads version " + std::to_string(kLayoutVersion));
  }
  if (h.checksum != checksum_of(h)) throw PageFileError(name + " header is corrupt");
  if (h.page_size != page_size) {
    throw PageFileError(name + " has " + std::to_string(h.page_size) + "-byte pages, not " +
                        std::to_string(page_size) + " (--page-size)");
  }
  if (size % page_size != 0) {
    throw PageFileError(name + " is truncated: " + std::to_string(size) +
                        " bytes is not a whole number of " + std::to_string(page_size) +
                        "-byte pages");
  }
  if (size / page_size < h.page_count) {
    throw PageFileError(name + " is truncated: " + std::to_string(size / page_size) +
                        " pages, its header says " + std::to_string(h.page_count));
  }
  file_id = h.file_id;
  page_count.store(size / page_size);
  header_count = h.page_count;
}

PageFile::PageFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PageFile::~PageFile() = default;

std::unique_ptr<PageFile> PageFile::open(const PageFileOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->path = options.path;
  impl->name = "page file " + options.path;
  impl->page_size = options.page_size;
  if (!valid_page_size(options.page_size)) {
    throw PageFileError(impl->name + ": page size " + std::to_string(options.page_size) +
                        " is not a power of two from " + std::to_string(kMinPageSize) + " to " +
                        std::to_string(kMaxPageSize));
  }
  struct stat st {};
  if (::stat(options.path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) throw PageFileError(impl->name + " is not a regular file");
    impl->open_existing(options, static_cast<std::uint64_t>(st.st_size));
  } else if (errno == ENOENT) {
    if (options.max_bytes / options.page_size < 2) {
      throw PageFileError(impl->name + ": a maximum of " + std::to_string(options.max_bytes) +
                          " bytes holds no page of " + std::to_string(options.page_size) +
                          " bytes beside the header");
    }
    impl->create(options);
  } else {
    fail("cannot stat " + impl->name, errno);
  }
  // A file already past the maximum (it was lowered) stays usable but does not grow.
  impl->max_pages = std::max<PageId>(options.max_bytes / options.page_size, impl->page_count);
  return std::unique_ptr<PageFile>(new PageFile(std::move(impl)));
}

const std::string& PageFile::path() const noexcept { return impl_->path; }
std::size_t PageFile::page_size() const noexcept { return impl_->page_size; }
std::uint64_t PageFile::file_id() const noexcept { return impl_->file_id; }
bool PageFile::created() const noexcept { return impl_->created; }
bool PageFile::direct_io() const noexcept { return impl_->direct; }
PageId PageFile::page_count() const noexcept {
  return impl_->page_count.load(std::memory_order_acquire);
}
PageId PageFile::max_pages() const noexcept { return impl_->max_pages; }

bool PageFile::extend(PageId pages) {
  Impl& f = *impl_;
  if (pages <= page_count()) return true;
  if (pages > f.max_pages) return false;
  std::lock_guard lock(f.grow_mutex);
  const PageId count = f.page_count.load(std::memory_order_relaxed);
  if (pages <= count) return true;
  const PageId extent = std::max<PageId>(1, kExtentBytes / f.page_size);
  const PageId target = std::min(f.max_pages, (pages + extent - 1) / extent * extent);
  const off_t from = f.offset_of(count);
  const off_t length = f.offset_of(target) - from;
  if (::fallocate(f.fd, 0, from, length) != 0) {
    if (errno == ENOSPC) return false;
    if (errno != EOPNOTSUPP && errno != ENOSYS) fail("cannot extend " + f.name, errno);
    if (::ftruncate(f.fd, f.offset_of(target)) != 0) {
      if (errno == ENOSPC || errno == EFBIG) return false;
      fail("cannot extend " + f.name, errno);
    }
  }
  f.page_count.store(target, std::memory_order_release);
  return true;
}

void PageFile::read(PageId id, std::byte* out) const {
  const Impl& f = *impl_;
  if (id >= page_count()) {
    throw PageFileError(f.name + ": page " + std::to_string(id) + " is past the end (" +
                        std::to_string(page_count()) + " pages)");
  }
  read_all(f.fd, out, f.page_size, f.offset_of(id), f.name + " page " + std::to_string(id));
  impl_->reads.fetch_add(1, std::memory_order_relaxed);
}

void PageFile::write(PageId id, const std::byte* in) {
  Impl& f = *impl_;
  if (id == 0 || id >= page_count()) {
    throw PageFileError(f.name + ": page " + std::to_string(id) + " is not an engine page (" +
                        std::to_string(page_count()) + " pages)");
  }
  write_all(f.fd, in, f.page_size, f.offset_of(id), f.name + " page " + std::to_string(id));
  f.writes.fetch_add(1, std::memory_order_relaxed);
}

// The header's page count is raised only after the extension it records is durable, so a
// file is never shorter than its header says unless something outside pmcached cut it.
//
// A failed fdatasync is final: Linux reports a lost write-back once and then marks the pages
// clean, so a second fdatasync would succeed with the data gone, and the callers (a checkpoint,
// the double-write buffer's ring) would take it as durable (PostgreSQL's "fsyncgate"). Every
// later sync() throws too; the slot images and the redo log still hold what the file lost, and
// the next start repairs and replays from them.
void PageFile::sync() {
  Impl& f = *impl_;
  if (f.sync_failed.load(std::memory_order_acquire)) {
    throw PageFileError("cannot sync " + f.name +
                        ": an earlier fdatasync failed, writes since may be lost (restart to "
                        "repair and replay them)");
  }
  const auto sync_once = [&f] {
    try {
      sync_fd(f.fd, f.name);
    } catch (const PageFileError&) {
      f.sync_failed.store(true, std::memory_order_release);
      throw;
    }
  };
  const PageId count = page_count();
  sync_once();
  f.syncs.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(f.grow_mutex);
  if (count > f.header_count) {
    f.write_header(count, false);
    sync_once();
    f.header_count = count;
  }
}

std::uint64_t PageFile::reads() const noexcept {
  return impl_->reads.load(std::memory_order_relaxed);
}
std::uint64_t PageFile::writes() const noexcept {
  return impl_->writes.load(std::memory_order_relaxed);
}
std::uint64_t PageFile::syncs() const noexcept {
  return impl_->syncs.load(std::memory_order_relaxed);
}

}  // namespace pmcached::buffer

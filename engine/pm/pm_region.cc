// PmRegion: libpmem file mappings and DRAM regions, with flush/fence reported to a simulator.
#include "engine/pm/pm_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>
#include <system_error>
#include <utility>

#include <libpmem.h>

#include "engine/pm/crash_simulator.h"
#include "engine/pm/fault_injection.h"
#include "engine/pm/persistence.h"
#include "engine/pm/pool.h"

namespace pmcached::pm {
namespace {

// The record this thread handed to flush_before_publish() and has not flushed yet.
struct DeferredRecord {
  PmRegion* region = nullptr;
  const void* addr = nullptr;
  std::size_t len = 0;
};
thread_local DeferredRecord t_deferred;

// How many PublishBatch scopes the calling thread is in.
thread_local int t_publish_batches = 0;

[[noreturn]] void fail(const std::string& what, const std::string& path, int error) {
  throw PoolError(what + " " + path + ": " + std::strerror(error));
}

void attach_simulator(CrashSimulator* simulator, const char* base, std::size_t size) {
  if (simulator == nullptr) return;
  if (simulator->region_size() != size) {
    throw std::invalid_argument("CrashSimulator size differs from the region size");
  }
  simulator->attach(base);
}

}  // namespace

PmRegion::PmRegion(char* base, std::size_t size, bool is_pmem, bool mapped_file,
                   CrashSimulator* sim)
    : base_(base), size_(size), is_pmem_(is_pmem), mapped_file_(mapped_file), simulator_(sim) {}

PmRegion::~PmRegion() {
  if (t_deferred.region == this) t_deferred = {};  // a record in this region cannot outlive it
  if (mapped_file_) pmem_unmap(base_, size_);
  if (unmap_) ::munmap(base_, size_);
  if (fd_ >= 0) ::close(fd_);
}

int PmRegion::reserve(std::uint64_t offset, std::size_t len) noexcept {
  if (FaultInjection::active(Fault::kReserveFails)) return ENOSPC;
  if (fd_ < 0 || len == 0) return 0;
  return ::posix_fallocate(fd_, static_cast<off_t>(offset), static_cast<off_t>(len));
}

std::unique_ptr<PmRegion> PmRegion::map_file(const std::string& path, std::size_t size_if_new,
                                             bool& created) {
  struct stat st {};
  std::size_t mapped_len = 0;
  int is_pmem = 0;
  void* addr = nullptr;
  int fd = -1;
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) throw PoolError("pool " + path + " is not a regular file");
    if (static_cast<std::size_t>(st.st_size) < kMinPoolSize) {
      throw PoolError("pool " + path + " is truncated or not a pmcached pool (" +
                      std::to_string(st.st_size) + " bytes)");
    }
    fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) fail("cannot open pool", path, errno);
    created = false;
  } else {
    if (errno != ENOENT) fail("cannot stat pool", path, errno);
    // The directory must exist: whether to create it is the caller's policy.
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) fail("cannot create pool", path, errno);
    // Sparse: blocks are reserved as the heap grows (reserve()), so an empty pool costs neither
    // disk nor memory. The superblock's page is reserved now, so that formatting cannot fault.
    int error = ::ftruncate(fd, static_cast<off_t>(size_if_new)) != 0 ? errno : 0;
    if (error == 0) error = ::posix_fallocate(fd, 0, static_cast<off_t>(kSuperblockSize));
    if (error != 0) {
      ::close(fd);
      ::unlink(path.c_str());
      fail("cannot create pool", path, error);
    }
    created = true;
  }
  addr = pmem_map_file(path.c_str(), 0, 0, 0, &mapped_len, &is_pmem);
  if (addr == nullptr) {
    const int error = errno;
    ::close(fd);
    if (created) ::unlink(path.c_str());
    fail("cannot map pool", path, error);
  }
  std::unique_ptr<PmRegion> region(
      new PmRegion(static_cast<char*>(addr), mapped_len, is_pmem != 0, true, nullptr));
  region->fd_ = fd;
  return region;
}

std::unique_ptr<PmRegion> PmRegion::in_memory(std::size_t size, CrashSimulator* simulator) {
  // Mapped, not a zero-filled vector: the kernel zero-fills a page when it is first touched, so
  // a test's 32 MB pool costs what the test writes. (A vector cost two fills and a copy of the
  // whole size, and under TSan a shadow write for every byte: 1.6 s for every process of
  // engine_test, whose suites create each engine to ask what it can do.)
  std::unique_ptr<PmRegion> region(
      new PmRegion(map_anonymous(size), size, false, false, simulator));
  region->unmap_ = true;
  attach_simulator(simulator, region->base_, region->size_);
  return region;
}

std::unique_ptr<PmRegion> PmRegion::anonymous(std::size_t size) {
  std::unique_ptr<PmRegion> region(new PmRegion(map_anonymous(size), size, false, false, nullptr));
  region->unmap_ = true;
  region->volatile_ = true;
  return region;
}

char* PmRegion::map_anonymous(std::size_t size) {
  void* addr = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (addr == MAP_FAILED) throw std::bad_alloc();
  return static_cast<char*>(addr);
}

std::unique_ptr<PmRegion> PmRegion::from_image(const std::vector<char>& image,
                                               CrashSimulator* simulator) {
  std::unique_ptr<PmRegion> region(new PmRegion(nullptr, image.size(), false, false, simulator));
  // DRAM regions are cache-line aligned like a mapping: allocate one spare line and align.
  region->dram_.resize(image.size() + kCacheLine);
  const auto raw = reinterpret_cast<std::uintptr_t>(region->dram_.data());
  region->base_ = reinterpret_cast<char*>((raw + kCacheLine - 1) & ~(kCacheLine - 1));
  std::memcpy(region->base_, image.data(), image.size());
  attach_simulator(simulator, region->base_, region->size_);
  return region;
}

void PmRegion::flush(const void* addr, std::size_t len) noexcept {
  if (volatile_) return;
  if (simulator_ != nullptr) simulator_->on_flush(offset_of(addr), len);
  flush_lines(addr, len);
}

void PmRegion::flush_before_publish(const void* addr, std::size_t len) noexcept {
  flush_deferred();
  t_deferred = {this, addr, len};
}

void PmRegion::flush_deferred() noexcept {
  const DeferredRecord d = std::exchange(t_deferred, DeferredRecord{});
  if (d.region == nullptr) return;
  if (d.region->simulator_ != nullptr) {
    d.region->simulator_->on_flush(d.region->offset_of(d.addr), d.len);
  }
  flush_lines(d.addr, d.len, OpKind::kItem);
}

void PmRegion::fence() noexcept {
  if (volatile_) return;  // a record deferred in another region waits for that region's fence
  flush_deferred();
  if (simulator_ != nullptr) simulator_->on_fence();
  pm::fence();
}

void PmRegion::fence_deferred() noexcept {
  if (t_deferred.region != nullptr) fence();
}

void PmRegion::store_u64_persist(std::uint64_t* field, std::uint64_t value) noexcept {
  if (!FaultInjection::active(Fault::kSkipPublishOrder)) fence_deferred();
  store_u64(field, value);
  flush(field, sizeof(*field));
  if (t_publish_batches == 0) fence();
}

PmRegion::PublishBatch::PublishBatch(PmRegion& region) noexcept : region_(region) {
  ++t_publish_batches;
}

PmRegion::PublishBatch::~PublishBatch() {
  if (--t_publish_batches == 0) region_.fence();
}

void PmRegion::store_u64(std::uint64_t* field, std::uint64_t value) noexcept {
  std::atomic_ref<std::uint64_t>(*field).store(value, std::memory_order_release);
}

void PmRegion::sync() noexcept {
  if (mapped_file_ && !is_pmem_) (void)pmem_msync(base_, size_);
}

}  // namespace pmcached::pm

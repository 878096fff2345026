// PmRegion: a range of persistent memory (a mapped pool file, or DRAM for tests), addressed by
// 8-byte offsets so that references stay valid across restarts and remappings.
//
// Writes are ordinary stores into base(); they become durable only through flush + fence
// (persist). With a CrashSimulator attached, every flush and fence is reported to it, so a
// test can restart from exactly what had reached persistence at any persistence point.
//
// Failure atomicity: an aligned 8-byte store is the unit that reaches PM whole (the
// assumption of seed 002); store_u64_persist() is the one way code publishes such a store.
//
// Thread safety: flush/fence/persist may be called from any thread; callers synchronise
// their own writes to the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pmcached::pm {

class CrashSimulator;

class PmRegion {
 public:
  // Maps `path` with libpmem: an existing file at its size, or a new file of `size_if_new`
  // bytes (`created` tells which). Throws PoolError (pool.h) on any failure.
  static std::unique_ptr<PmRegion> map_file(const std::string& path, std::size_t size_if_new,
                                            bool& created);
  // Zero-filled DRAM of `size` bytes; an attached simulator sees every flush and fence.
  static std::unique_ptr<PmRegion> in_memory(std::size_t size, CrashSimulator* simulator = nullptr);
  // DRAM initialised from `image` (a restart from a simulated crash).
  static std::unique_ptr<PmRegion> from_image(const std::vector<char>& image,
                                              CrashSimulator* simulator = nullptr);

  ~PmRegion();
  PmRegion(const PmRegion&) = delete;
  PmRegion& operator=(const PmRegion&) = delete;

  [[nodiscard]] char* base() const noexcept { return base_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  // True when libpmem reports real (DAX) persistent memory.
  [[nodiscard]] bool is_pmem() const noexcept { return is_pmem_; }
  [[nodiscard]] bool is_file() const noexcept { return mapped_file_; }

  template <typename T>
  [[nodiscard]] T* at(std::uint64_t offset) const noexcept {
    return reinterpret_cast<T*>(base_ + offset);
  }
  [[nodiscard]] std::uint64_t offset_of(const void* p) const noexcept {
    return static_cast<std::uint64_t>(static_cast<const char*>(p) - base_);
  }

  void flush(const void* addr, std::size_t len) noexcept;
  void fence() noexcept;
  void persist(const void* addr, std::size_t len) noexcept {
    flush(addr, len);
    fence();
  }
  // The failure-atomic commit: an aligned 8-byte store, flushed and fenced.
  void store_u64_persist(std::uint64_t* field, std::uint64_t value) noexcept;

  // Makes everything durable on a non-PM file (msync); a no-op on real PM and in DRAM.
  void sync() noexcept;

 private:
  PmRegion(char* base, std::size_t size, bool is_pmem, bool mapped_file, CrashSimulator* sim);

  char* base_;
  std::size_t size_;
  bool is_pmem_;
  bool mapped_file_;
  CrashSimulator* simulator_;
  std::vector<char> dram_;  // backing store of in-memory regions
};

}  // namespace pmcached::pm

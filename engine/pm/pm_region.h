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
// Publishing order: what a published reference points to must be durable before the reference
// can be. The store's item record is handed over with flush_before_publish(), which defers its
// flush to the calling thread's next fence (or publishing store): an index that fences before it
// publishes (a new node, a new leaf entry) writes the record back together with its own lines,
// under one fence; one that publishes with its first store gets the record fenced first, as it
// always did. Why defer the flush rather than only the fence: a locked instruction (the index's
// lock) waits for this CPU's outstanding write-backs like a fence does, so a record flushed
// before the index locks costs a wait of its own. A reference is therefore written into a
// reachable place only by store_u64_persist() or after a fence (tests/engine/
// store_crash_test.cc checks it for every engine under the adversarial crash simulator).
//
// Group commit: inside a PublishBatch, store_u64_persist() flushes its store but does not fence;
// the batch's end fences once for all of them. Each publish still comes after a fence that made
// what it points to durable (a record or a new node is fenced before its reference is stored),
// so a crash leaves each publish of the batch done or not, independently; the owner of the batch
// acknowledges none of them before that last fence, and frees nothing the batch unlinked before
// it either (a block reused in the batch could reach PM before the store that unlinked it).
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
  // bytes (`created` tells which) in an existing directory. A new file is sparse: only its
  // first 4 KiB are reserved; the allocator reserves the rest as it grows (reserve()). Throws
  // PoolError (pool.h) on any failure; a file it created is then removed.
  static std::unique_ptr<PmRegion> map_file(const std::string& path, std::size_t size_if_new,
                                            bool& created);
  // Zero-filled DRAM of `size` bytes (an anonymous mapping: pages are committed as they are
  // touched); an attached simulator sees every flush and fence. Throws std::bad_alloc if it
  // cannot be mapped.
  static std::unique_ptr<PmRegion> in_memory(std::size_t size, CrashSimulator* simulator = nullptr);
  // Volatile memory for a heap that needs no persistence (the DRAM item heap): an anonymous
  // private mapping of `size` bytes, reserved but not committed, so resident memory follows
  // what is written; flush and fence do nothing. Throws std::bad_alloc if it cannot be mapped.
  static std::unique_ptr<PmRegion> anonymous(std::size_t size);
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
  // Flushes a deferred record first (flush_before_publish).
  void fence() noexcept;
  void persist(const void* addr, std::size_t len) noexcept {
    flush(addr, len);
    fence();
  }
  // Defers the flush of a record a reference will be published to (see above). At most one
  // per thread: an earlier one still deferred is flushed now.
  void flush_before_publish(const void* addr, std::size_t len) noexcept;
  // Fences a deferred record if one is still waiting (after an index that published without
  // any fence, or published nothing).
  void fence_deferred() noexcept;
  // The failure-atomic commit: fences a deferred record first, then an aligned 8-byte store,
  // flushed and fenced.
  void store_u64_persist(std::uint64_t* field, std::uint64_t value) noexcept;
  // An aligned 8-byte store that publishes nothing (e.g. clearing a valid bit); the caller
  // persists it.
  void store_u64(std::uint64_t* field, std::uint64_t value) noexcept;

  // The calling thread's store_u64_persist() calls leave out their fence until the batch ends,
  // which fences once (see "Group commit" above). Batches nest; the outermost one fences.
  class PublishBatch {
   public:
    explicit PublishBatch(PmRegion& region) noexcept;
    ~PublishBatch();
    PublishBatch(const PublishBatch&) = delete;
    PublishBatch& operator=(const PublishBatch&) = delete;

   private:
    PmRegion& region_;
  };

  // Reserves the file's blocks for [offset, offset + len) (posix_fallocate), so that writing
  // there cannot fault with SIGBUS on a full file system (or tmpfs). Returns 0 or the errno;
  // always 0 for a DRAM region.
  [[nodiscard]] int reserve(std::uint64_t offset, std::size_t len) noexcept;

  // Makes everything durable on a non-PM file (msync); a no-op on real PM and in DRAM.
  void sync() noexcept;

 private:
  // Flushes the calling thread's deferred record, whatever region it lies in.
  static void flush_deferred() noexcept;

  PmRegion(char* base, std::size_t size, bool is_pmem, bool mapped_file, CrashSimulator* sim);
  // A private anonymous mapping of `size` bytes, reserved but not committed; std::bad_alloc if
  // it cannot be had.
  static char* map_anonymous(std::size_t size);

  char* base_;
  std::size_t size_;
  bool is_pmem_;
  bool mapped_file_;
  CrashSimulator* simulator_;
  int fd_ = -1;             // a mapped file's, kept open for reserve()
  std::vector<char> dram_;  // backing store of from_image() regions
  bool unmap_ = false;      // in_memory() and anonymous(): munmap at the end
  bool volatile_ = false;   // anonymous(): no flushes, no fences
};

}  // namespace pmcached::pm

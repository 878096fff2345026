// ExtendibleHashTable: the buffer manager's page table, page id -> frame (seed 003 §1.3.1).
//
// Extendible hashing on XXH3_64bits of the page id. A directory of 2^global_depth bucket
// pointers is indexed by the hash's low global_depth bits; a bucket holds up to kBucketSlots
// entries whose hashes share its low local_depth bits (its prefix), and 2^(global - local)
// directory entries point at it. An insert into a full bucket splits it on its next hash bit,
// doubling the directory first when local depth = global depth, until the entry fits. The table
// never holds more entries than the pool has frames, so it never shrinks: a bucket emptied by
// erase() stays for the pages that come next.
//
// (Seed 003 chains pages in a bucket and doubles the directory when entries > 0.8 x directory
// size. Fixed-size buckets split on overflow are the textbook scheme: a lookup scans at most
// kBucketSlots entries, contiguous in memory, and never follows a list.)
//
// Concurrency: lookup() takes no lock and writes nothing shared, so hits on different cores do
// not contend. Each bucket has a version (a seqlock: odd while a writer changes it); a lookup
// scans the bucket between two reads of the same even version and retries from the directory if
// the version moved or the bucket's prefix no longer matches the hash (it was split meanwhile).
// insert() and erase() (misses and evictions, which do I/O anyway) are serialised by one mutex.
// Directories outgrown by doubling and all buckets are freed only with the table (a lookup may
// still be reading them); the outgrown directories add up to less than the current one.
//
// Thread safety: every method from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/buffer/buffer_types.h"

namespace pmcached::buffer {

class ExtendibleHashTable {
 public:
  static constexpr std::size_t kBucketSlots = 8;
  static constexpr unsigned kMaxDepth = 32;

  ExtendibleHashTable();
  ~ExtendibleHashTable();
  ExtendibleHashTable(const ExtendibleHashTable&) = delete;
  ExtendibleHashTable& operator=(const ExtendibleHashTable&) = delete;

  // The frame that holds `page`, or kNoFrame. Adds the entries it compared to `probes`.
  [[nodiscard]] FrameId lookup(PageId page, std::uint64_t& probes) const noexcept;
  // Maps `page` to `frame` and returns `frame`, unless `page` is already mapped: then returns
  // its frame and changes nothing.
  FrameId insert(PageId page, FrameId frame);
  // Removes `page` if it maps to `frame`; false if it does not.
  bool erase(PageId page, FrameId frame) noexcept;

  [[nodiscard]] std::size_t size() const noexcept;
  [[nodiscard]] unsigned global_depth() const noexcept;
  [[nodiscard]] std::size_t bucket_count() const noexcept;

  [[nodiscard]] static std::uint64_t hash(PageId page) noexcept;

 private:
  struct Bucket;
  struct Directory;

  Bucket* new_bucket(unsigned depth, std::uint64_t prefix);
  Directory* double_directory();
  void split(Bucket& bucket);

  std::atomic<Directory*> directory_{nullptr};
  mutable std::mutex write_mutex_;
  std::vector<std::unique_ptr<Directory>> directories_;  // every one made, the current last
  std::vector<std::unique_ptr<Bucket>> buckets_;
  std::size_t size_ = 0;
};

}  // namespace pmcached::buffer

#include "engine/buffer/extendible_hash_table.h"

#include <stdexcept>
#include <thread>

// Inlined: XXH3 of an 8-byte id is a few multiplies, less than the call into the library.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace pmcached::buffer {
namespace {

constexpr std::uint64_t mask(unsigned depth) noexcept { return (std::uint64_t{1} << depth) - 1; }

}  // namespace

// Writers store every field with release (after making the version odd); readers load every
// field with acquire. A reader that sees any store of a write therefore also sees the odd
// version when it reads the version again, and retries: no fences needed.
struct ExtendibleHashTable::Bucket {
  std::atomic<std::uint64_t> version{0};  // odd while a writer changes the bucket
  std::atomic<unsigned> depth{0};         // local depth
  std::atomic<std::uint64_t> prefix{0};   // low `depth` hash bits of every entry
  std::atomic<std::uint32_t> count{0};
  std::array<std::atomic<PageId>, kBucketSlots> pages{};
  std::array<std::atomic<FrameId>, kBucketSlots> frames{};

  void begin_write() noexcept {
    version.store(version.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  void end_write() noexcept {
    version.store(version.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
  void put(std::uint32_t at, PageId page, FrameId frame) noexcept {
    pages[at].store(page, std::memory_order_release);
    frames[at].store(frame, std::memory_order_release);
  }
};

struct ExtendibleHashTable::Directory {
  explicit Directory(unsigned d)
      : depth(d), slots(std::make_unique<std::atomic<Bucket*>[]>(std::size_t{1} << d)) {}
  const unsigned depth;
  std::unique_ptr<std::atomic<Bucket*>[]> slots;
};

ExtendibleHashTable::ExtendibleHashTable() {
  directories_.push_back(std::make_unique<Directory>(0));
  directories_.back()->slots[0].store(new_bucket(0, 0), std::memory_order_relaxed);
  directory_.store(directories_.back().get(), std::memory_order_release);
}

ExtendibleHashTable::~ExtendibleHashTable() = default;

std::uint64_t ExtendibleHashTable::hash(PageId page) noexcept {
  return XXH3_64bits(&page, sizeof(page));
}

FrameId ExtendibleHashTable::lookup(PageId page, std::uint64_t& probes) const noexcept {
  const std::uint64_t h = hash(page);
  for (;;) {
    const Directory* d = directory_.load(std::memory_order_acquire);
    const Bucket* b = d->slots[h & mask(d->depth)].load(std::memory_order_acquire);
    const std::uint64_t version = b->version.load(std::memory_order_acquire);
    if ((version & 1) != 0) {
      std::this_thread::yield();
      continue;
    }
    const unsigned depth = b->depth.load(std::memory_order_acquire);
    const bool ours = (h & mask(depth)) == b->prefix.load(std::memory_order_acquire);
    FrameId found = kNoFrame;
    std::uint64_t looked = 0;
    if (ours) {
      const std::uint32_t n = b->count.load(std::memory_order_acquire);
      for (std::uint32_t i = 0; i < n && i < kBucketSlots; ++i) {
        ++looked;
        if (b->pages[i].load(std::memory_order_acquire) == page) {
          found = b->frames[i].load(std::memory_order_acquire);
          break;
        }
      }
    }
    // Changed meanwhile, or split after we read the directory: the entry may be elsewhere.
    if (b->version.load(std::memory_order_relaxed) != version || !ours) continue;
    probes += looked;
    return found;
  }
}

FrameId ExtendibleHashTable::insert(PageId page, FrameId frame) {
  std::lock_guard lock(write_mutex_);
  const std::uint64_t h = hash(page);
  for (;;) {
    Directory* d = directory_.load(std::memory_order_relaxed);
    Bucket& b = *d->slots[h & mask(d->depth)].load(std::memory_order_relaxed);
    const std::uint32_t n = b.count.load(std::memory_order_relaxed);
    for (std::uint32_t i = 0; i < n; ++i) {
      if (b.pages[i].load(std::memory_order_relaxed) == page) {
        return b.frames[i].load(std::memory_order_relaxed);
      }
    }
    if (n < kBucketSlots) {
      b.begin_write();
      b.put(n, page, frame);
      b.count.store(n + 1, std::memory_order_release);
      b.end_write();
      ++size_;
      return frame;
    }
    if (b.depth.load(std::memory_order_relaxed) == d->depth) {
      if (d->depth == kMaxDepth) throw std::length_error("page table: hash bits exhausted");
      double_directory();
    }
    split(b);
  }
}

bool ExtendibleHashTable::erase(PageId page, FrameId frame) noexcept {
  std::lock_guard lock(write_mutex_);
  const std::uint64_t h = hash(page);
  const Directory* d = directory_.load(std::memory_order_relaxed);
  Bucket& b = *d->slots[h & mask(d->depth)].load(std::memory_order_relaxed);
  const std::uint32_t n = b.count.load(std::memory_order_relaxed);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (b.pages[i].load(std::memory_order_relaxed) != page) continue;
    if (b.frames[i].load(std::memory_order_relaxed) != frame) return false;
    const std::uint32_t last = n - 1;
    b.begin_write();
    b.put(i, b.pages[last].load(std::memory_order_relaxed),
          b.frames[last].load(std::memory_order_relaxed));
    b.put(last, kNoPage, kNoFrame);
    b.count.store(last, std::memory_order_release);
    b.end_write();
    --size_;
    return true;
  }
  return false;
}

ExtendibleHashTable::Bucket* ExtendibleHashTable::new_bucket(unsigned depth, std::uint64_t prefix) {
  buckets_.push_back(std::make_unique<Bucket>());
  Bucket* b = buckets_.back().get();
  b->depth.store(depth, std::memory_order_relaxed);
  b->prefix.store(prefix, std::memory_order_relaxed);
  return b;
}

// Readers may still be on the old directory: its buckets' prefixes send them back here.
ExtendibleHashTable::Directory* ExtendibleHashTable::double_directory() {
  const Directory& old = *directory_.load(std::memory_order_relaxed);
  auto bigger = std::make_unique<Directory>(old.depth + 1);
  const std::size_t n = std::size_t{1} << bigger->depth;
  for (std::size_t i = 0; i < n; ++i) {
    bigger->slots[i].store(old.slots[i & mask(old.depth)].load(std::memory_order_relaxed),
                           std::memory_order_relaxed);
  }
  directories_.push_back(std::move(bigger));
  directory_.store(directories_.back().get(), std::memory_order_release);
  return directories_.back().get();
}

// Moves the entries whose next hash bit is 1 to a new bucket (filled before anyone can see it)
// and points the directory entries of that half at it, all inside one write of `bucket`.
void ExtendibleHashTable::split(Bucket& bucket) {
  const unsigned depth = bucket.depth.load(std::memory_order_relaxed);
  const std::uint64_t bit = std::uint64_t{1} << depth;
  const std::uint64_t prefix = bucket.prefix.load(std::memory_order_relaxed);
  Bucket& sibling = *new_bucket(depth + 1, prefix | bit);
  const std::uint32_t n = bucket.count.load(std::memory_order_relaxed);
  std::uint32_t kept = 0;
  std::uint32_t moved = 0;
  bucket.begin_write();
  for (std::uint32_t i = 0; i < n; ++i) {
    const PageId page = bucket.pages[i].load(std::memory_order_relaxed);
    const FrameId frame = bucket.frames[i].load(std::memory_order_relaxed);
    if ((hash(page) & bit) != 0) {
      sibling.put(moved++, page, frame);
    } else {
      bucket.put(kept++, page, frame);
    }
  }
  for (std::uint32_t i = kept; i < n; ++i) bucket.put(i, kNoPage, kNoFrame);
  sibling.count.store(moved, std::memory_order_relaxed);
  bucket.count.store(kept, std::memory_order_release);
  bucket.depth.store(depth + 1, std::memory_order_release);
  Directory& d = *directory_.load(std::memory_order_relaxed);
  const std::size_t size = std::size_t{1} << d.depth;
  for (std::size_t i = prefix | bit; i < size; i += bit << 1) {
    d.slots[i].store(&sibling, std::memory_order_release);
  }
  bucket.end_write();
}

std::size_t ExtendibleHashTable::size() const noexcept {
  std::lock_guard lock(write_mutex_);
  return size_;
}

unsigned ExtendibleHashTable::global_depth() const noexcept {
  return directory_.load(std::memory_order_acquire)->depth;
}

std::size_t ExtendibleHashTable::bucket_count() const noexcept {
  std::lock_guard lock(write_mutex_);
  return buckets_.size();
}

}  // namespace pmcached::buffer

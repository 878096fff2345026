// BufferManager: the fix protocol, eviction and write-back, and pointer swizzling.
//
// Latch order (docs/BUFFER_MANAGER.md): fixers latch parent before child and may block; the
// evictor claims its victim (pins 0 -> -1), then only try-latches the victim (exclusively) and
// then its parent (shared), and gives the victim up if either is busy, so it never waits
// against a traversal.
#include "engine/buffer/buffer_manager.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "engine/buffer/aligned_buffer.h"
#include "engine/buffer/buffer_counters.h"
#include "engine/buffer/buffer_frame.h"
#include "engine/buffer/extendible_hash_table.h"
#include "engine/buffer/page_checksum.h"
#include "engine/buffer/page_file.h"
#include "engine/buffer/replacement_policy.h"
#include "engine/buffer/swizzle_tag.h"

namespace pmcached::buffer {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kVictimAttempts = 8;  // victims claimed in vain before looking at free frames again

// An engine broke a rule of buffer_manager.h; going on would hand out wrong pages.
[[noreturn]] void contract_violation(const char* what) noexcept {
  std::fprintf(stderr, "pmcached: buffer manager contract violated: %s\n", what);
  std::abort();
}

std::atomic_ref<std::uint64_t> atomic_slot(std::uint64_t& slot) noexcept {
  return std::atomic_ref<std::uint64_t>(slot);
}

PageHeader& header_of(std::byte* page) noexcept { return *reinterpret_cast<PageHeader*>(page); }

// Write-back copies: one page per thread, aligned for O_DIRECT.
std::byte* scratch_page() {
  thread_local AlignedBuffer buffer(kMaxPageSize);
  return buffer.data();
}

}  // namespace

struct BufferManager::Impl {
  Impl(BufferManager& owner_in, PageFile& file_in, BufferOptions options_in);

  BufferManager& owner;
  PageFile& file;
  const BufferOptions options;
  const std::size_t page_size;
  const std::size_t frame_count;
  AlignedBuffer memory;  // frame_count pages
  std::unique_ptr<BufferFrame[]> frames;
  ExtendibleHashTable table;
  std::unique_ptr<ReplacementPolicy> policy;
  mutable std::mutex policy_mutex;  // on_load, on_evict, pick_victim
  std::mutex free_mutex;
  std::vector<FrameId> free_frames;
  std::mutex write_back_mutex;  // one write_back_all() at a time
  std::atomic<PageId> root{kNoPage};
  // The frame the root was last found in. Every descent fixes the root, and the root is never
  // evicted, so this spares the page table nearly always; try_fix_resident() checks that the
  // frame still holds the root, and a stale hint falls back to the table.
  std::atomic<FrameId> root_frame{kNoFrame};
  std::atomic<std::uint64_t> dirty_count{0};
  std::atomic<std::uint64_t> resident{0};
  BufferCounters counters;

  std::byte* data(FrameId f) const noexcept { return memory.data() + std::size_t{f} * page_size; }
  bool swizzling() const noexcept { return options.page_table == PageTableKind::kSwizzle; }
  PageGuard guard(FrameId f, PageId id, LatchMode mode) noexcept {
    return PageGuard(&owner, f, id, mode, data(f));
  }
  static void latch(BufferFrame& frame, LatchMode mode) {
    if (mode == LatchMode::kShared) {
      frame.latch.lock_shared();
    } else {
      frame.latch.lock();
    }
  }
  static void unlatch(BufferFrame& frame, LatchMode mode) noexcept {
    if (mode == LatchMode::kShared) {
      frame.latch.unlock_shared();
    } else {
      frame.latch.unlock();
    }
  }

  void check_page(PageId id) const;
  // `held` is a frame the calling thread holds latched (fix_child's parent) or kNoFrame.
  PageGuard fix(PageId id, LatchMode mode, FrameId held = kNoFrame);
  PageGuard try_fix_resident(FrameId f, PageId id, LatchMode mode);
  PageGuard hit(FrameId f, PageId id, LatchMode mode);
  OptimisticPage read_resident(FrameId f, PageId id);
  PageGuard load(PageId id, LatchMode mode, FrameId held);
  FrameId take_frame(FrameId held);
  void release_frame(FrameId f);
  FrameId evict_one(FrameId held);
  bool evictable(FrameId f, FrameId held) const noexcept;
  bool try_evict(FrameId f, FrameId held);
  bool unswizzle_in_parent(FrameId child, PageId child_page, FrameId held);
  void swizzle(const PageGuard& parent, std::uint64_t* slot, std::uint64_t id,
               const PageGuard& child);
  void copy_for_write(FrameId f, std::byte* out) const;
  void write_copy(PageId id, std::byte* copy);
  void mark_dirty(FrameId f) noexcept;
  void mark_clean(FrameId f) noexcept;
};

BufferManager::Impl::Impl(BufferManager& owner_in, PageFile& file_in, BufferOptions options_in)
    : owner(owner_in),
      file(file_in),
      options(std::move(options_in)),
      page_size(file_in.page_size()),
      frame_count(options.frames),
      memory(options.frames * file_in.page_size() + kOptimisticReach),
      frames(std::make_unique<BufferFrame[]>(options.frames)),
      policy(make_replacement_policy(options.eviction, options.frames, options.seed)) {
  free_frames.reserve(frame_count);
  for (std::size_t f = frame_count; f-- > 0;) free_frames.push_back(static_cast<FrameId>(f));
}

void BufferManager::Impl::check_page(PageId id) const {
  if (id == kNoPage || id >= file.page_count()) {
    throw PageFileError("page file " + file.path() + ": no page " + std::to_string(id) + " (" +
                        std::to_string(file.page_count()) + " pages)");
  }
}

PageGuard BufferManager::Impl::fix(PageId id, LatchMode mode, FrameId held) {
  const bool is_root = id == root.load(std::memory_order_relaxed);
  if (is_root) {
    const FrameId f = root_frame.load(std::memory_order_relaxed);
    if (f != kNoFrame) {
      if (PageGuard g = hit(f, id, mode)) return g;
    }
  }
  for (;;) {
    std::uint64_t probes = 0;
    const FrameId f = table.lookup(id, probes);
    counters.add(BufferEvent::kHashProbes, probes);
    if (f != kNoFrame) {
      if (PageGuard g = hit(f, id, mode)) {
        if (is_root) root_frame.store(f, std::memory_order_relaxed);
        return g;
      }
    } else {
      // Only a miss needs the check: the table holds nothing but pages loaded before.
      check_page(id);
      if (PageGuard g = load(id, mode, held)) return g;
    }
    // Lost a race: the frame was being evicted, or held another page by now, or another
    // thread published the page first.
    counters.add(BufferEvent::kFixRetries);
    std::this_thread::yield();
  }
}

// A hit: the page fixed in frame `f` (found in the table or the root's hint), counted and told
// to the policy; empty if the frame no longer holds it.
PageGuard BufferManager::Impl::hit(FrameId f, PageId id, LatchMode mode) {
  PageGuard g = try_fix_resident(f, id, mode);
  if (g) {
    counters.add(BufferEvent::kHits);
    policy->on_hit(f);
  }
  return g;
}

// Pin, check the frame still holds `id`, latch, check again (a load that failed leaves the
// frame empty): a frame pinned and holding `id` cannot lose it until unpinned.
PageGuard BufferManager::Impl::try_fix_resident(FrameId f, PageId id, LatchMode mode) {
  BufferFrame& frame = frames[f];
  if (!frame.try_pin()) return {};
  if (frame.page.load(std::memory_order_acquire) != id) {
    frame.unpin();
    return {};
  }
  latch(frame, mode);
  if (frame.page.load(std::memory_order_relaxed) != id) {
    unlatch(frame, mode);
    frame.unpin();
    return {};
  }
  return guard(f, id, mode);
}

// An optimistic hit: frame `f` held page `id`, unlatched, when its version was read (the id is
// read after the version, so validating the version later proves the frame kept the page).
OptimisticPage BufferManager::Impl::read_resident(FrameId f, PageId id) {
  const BufferFrame& frame = frames[f];
  const std::uint64_t version = frame.latch.version();
  if (FrameLatch::exclusive(version) || frame.page.load(std::memory_order_acquire) != id) return {};
  counters.add(BufferEvent::kHits);
  policy->on_hit(f);
  return OptimisticPage(f, version, data(f));
}

// A miss: the page is published in the table while its frame is latched exclusively, so
// concurrent fixes of it wait on the latch instead of reading it twice.
PageGuard BufferManager::Impl::load(PageId id, LatchMode mode, FrameId held) {
  const FrameId f = take_frame(held);  // pinned and latched exclusively
  BufferFrame& frame = frames[f];
  frame.page.store(id, std::memory_order_release);
  if (table.insert(id, f) != f) {  // another thread is loading it
    frame.page.store(kNoPage, std::memory_order_release);
    frame.latch.unlock();
    frame.unpin();
    release_frame(f);
    return {};
  }
  try {
    file.read(id, data(f));
    const PageHeader& h = header_of(data(f));
    if (h.checksum != page_checksum(data(f), page_size) && !all_zero(data(f), page_size)) {
      throw PageFileError("page file " + file.path() + ": page " + std::to_string(id) +
                          " has a bad checksum (torn, corrupt or foreign page)");
    }
  } catch (...) {
    table.erase(id, f);
    frame.page.store(kNoPage, std::memory_order_release);
    frame.latch.unlock();
    frame.unpin();
    release_frame(f);
    throw;
  }
  resident.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard lock(policy_mutex);
    policy->on_load(f, id);
  }
  counters.add(BufferEvent::kMisses);
  if (mode == LatchMode::kShared) {
    frame.latch.unlock();  // no downgrade in std::shared_mutex; the pin keeps the page here
    frame.latch.lock_shared();
  }
  return guard(f, id, mode);
}

// A frame for a new page, pinned and latched exclusively, with no page: a free one, else the
// replacement policy's victim.
FrameId BufferManager::Impl::take_frame(FrameId held) {
  Clock::time_point first_failure{};
  for (bool failed_before = false;; failed_before = true) {
    FrameId f = kNoFrame;
    {
      std::lock_guard lock(free_mutex);
      if (!free_frames.empty()) {
        f = free_frames.back();
        free_frames.pop_back();
      }
    }
    if (f != kNoFrame) {
      // A fix or drop() working from a stale lookup may still hold a pin or a claim for a
      // moment: it will find no page here and leave.
      while (!frames[f].try_pin()) std::this_thread::yield();
      frames[f].latch.lock();
      return f;
    }
    f = evict_one(held);
    if (f != kNoFrame) return f;
    // Other threads may be about to unpin or free frames: full only if it lasts.
    if (!failed_before) first_failure = Clock::now();
    if (failed_before &&
        Clock::now() - first_failure > std::chrono::milliseconds(options.full_after_ms)) {
      throw BufferFullError("buffer pool: all " + std::to_string(frame_count) +
                            " frames are pinned or may not be evicted");
    }
    std::this_thread::yield();
  }
}

void BufferManager::Impl::release_frame(FrameId f) {
  std::lock_guard lock(free_mutex);
  free_frames.push_back(f);
}

// A pre-check for the policy; try_evict() decides under the claim and the latches. It must
// also refuse a frame whose parent is latched exclusively (perhaps by this very thread, higher
// up the tree): try_evict() would fail on it every time, and a policy that offers the same
// frame again (LRU) would never move on.
bool BufferManager::Impl::evictable(FrameId f, FrameId held) const noexcept {
  const BufferFrame& frame = frames[f];
  const PageId page = frame.page.load(std::memory_order_relaxed);
  if (page == kNoPage || frame.pins.load(std::memory_order_relaxed) != 0 ||
      frame.swizzled_children.load(std::memory_order_relaxed) != 0 ||
      page == root.load(std::memory_order_relaxed)) {
    return false;
  }
  const FrameId parent = frame.parent.load(std::memory_order_relaxed);
  if (parent == kNoFrame || parent == held) return true;
  if (parent == BufferFrame::kSwizzling) return false;
  BufferFrame& p = frames[parent];
  if (!p.latch.try_lock_shared()) return false;
  p.latch.unlock_shared();
  return true;
}

FrameId BufferManager::Impl::evict_one(FrameId held) {
  for (int attempt = 0; attempt < kVictimAttempts; ++attempt) {
    FrameId victim = kNoFrame;
    {
      std::lock_guard lock(policy_mutex);
      victim = policy->pick_victim([this, held](FrameId f) { return evictable(f, held); });
    }
    if (victim == kNoFrame) return kNoFrame;
    if (try_evict(victim, held)) return victim;
  }
  return kNoFrame;
}

// Claims `f`, unswizzles its reference in the parent, writes it back if dirty and takes it out
// of the table and the policy. On success the frame is ours: pinned once, latched exclusively,
// empty. False (nothing changed but perhaps an unswizzle) if it turned out busy.
bool BufferManager::Impl::try_evict(FrameId f, FrameId held) {
  BufferFrame& frame = frames[f];
  if (!frame.try_claim()) return false;
  auto abandon = [&frame] {
    frame.latch.unlock();
    frame.pins.store(0, std::memory_order_release);
  };
  if (!frame.latch.try_lock()) {
    frame.pins.store(0, std::memory_order_release);
    return false;
  }
  const PageId id = frame.page.load(std::memory_order_relaxed);
  if (id == kNoPage || id == root.load(std::memory_order_relaxed) ||
      frame.swizzled_children.load(std::memory_order_acquire) != 0) {
    abandon();
    return false;
  }
  if (!unswizzle_in_parent(f, id, held)) {
    abandon();
    return false;
  }
  if (frame.dirty.load(std::memory_order_acquire)) {
    try {
      std::byte* copy = scratch_page();
      copy_for_write(f, copy);
      write_copy(id, copy);
    } catch (...) {
      abandon();
      throw;
    }
    mark_clean(f);
  }
  table.erase(id, f);
  {
    std::lock_guard lock(policy_mutex);
    policy->on_evict(f, id, true);
  }
  frame.page.store(kNoPage, std::memory_order_release);
  resident.fetch_sub(1, std::memory_order_relaxed);
  counters.add(BufferEvent::kEvictions);
  frame.pins.store(1, std::memory_order_release);  // from kEvicting straight to our own pin
  return true;
}

// Turns the victim's tagged reference in its parent (if it is swizzled) back into its page id.
// The parent's latch is only try-latched, and shared: what must be kept out is an engine
// moving references under an exclusive latch; readers under shared latches may go on (the slot
// changes with one atomic store, and fix_child() re-reads the slot after pinning the frame it
// named). If the parent is the page the evicting thread holds itself (fix_child's parent), its
// latch is already held. A parent latched exclusively by another thread makes the evictor pick
// another victim, never wait.
bool BufferManager::Impl::unswizzle_in_parent(FrameId child, PageId child_page, FrameId held) {
  BufferFrame& c = frames[child];
  const FrameId parent = c.parent.load(std::memory_order_acquire);
  if (parent == kNoFrame) return true;
  if (parent == BufferFrame::kSwizzling) return false;
  BufferFrame& p = frames[parent];
  const bool latch_it = parent != held;
  if (latch_it && !p.latch.try_lock_shared()) return false;
  // unswizzle_children() may have run between the load and the latch.
  if (c.parent.load(std::memory_order_acquire) != parent) {
    if (latch_it) p.latch.unlock_shared();
    return false;
  }
  const std::uint64_t tag = swizzled_ref(child);
  bool found = false;
  options.child_slots(data(parent), [&](std::uint64_t& slot) {
    if (!found && atomic_slot(slot).load(std::memory_order_relaxed) == tag) {
      atomic_slot(slot).store(child_page, std::memory_order_release);
      found = true;
    }
  });
  if (!found) {
    contract_violation("a swizzled reference left its parent page (unswizzle_children() first)");
  }
  c.parent.store(kNoFrame, std::memory_order_release);
  p.swizzled_children.fetch_sub(1, std::memory_order_release);
  if (latch_it) p.latch.unlock_shared();
  counters.add(BufferEvent::kUnswizzles);
  return true;
}

// The frame's page as the file must see it: tagged references back to page ids. The caller
// holds the frame's latch exclusively, so no reference is being swizzled meanwhile and no
// swizzled child can leave (its eviction needs this latch).
void BufferManager::Impl::copy_for_write(FrameId f, std::byte* out) const {
  std::memcpy(out, data(f), page_size);
  if (!swizzling() || frames[f].swizzled_children.load(std::memory_order_acquire) == 0) return;
  options.child_slots(out, [this](std::uint64_t& slot) {
    if (is_swizzled(slot)) slot = frames[frame_of(slot)].page.load(std::memory_order_acquire);
  });
}

// The WAL rule, then the checksum, then the write.
void BufferManager::Impl::write_copy(PageId id, std::byte* copy) {
  PageHeader& h = header_of(copy);
  if (options.flush_log_to) options.flush_log_to(h.lsn);
  h.checksum = page_checksum(copy, page_size);
  if (options.write_page) {
    options.write_page(id, copy);
  } else {
    file.write(id, copy);
  }
  counters.add(BufferEvent::kWriteBacks);
}

void BufferManager::Impl::mark_dirty(FrameId f) noexcept {
  if (!frames[f].dirty.exchange(true, std::memory_order_acq_rel)) {
    dirty_count.fetch_add(1, std::memory_order_relaxed);
  }
}

void BufferManager::Impl::mark_clean(FrameId f) noexcept {
  if (frames[f].dirty.exchange(false, std::memory_order_acq_rel)) {
    dirty_count.fetch_sub(1, std::memory_order_relaxed);
  }
}

// Swizzles `*slot` (still `id`) to the child's frame if the parent is itself reachable by
// swizzled references (the root, or swizzled in its own parent) and the child is not swizzled
// elsewhere. The child's parent field is claimed first (kSwizzling), so of two racing swizzles
// one wins, and it names the parent only once the slot is tagged, so no page is swizzled under
// a parent whose own reference is not tagged yet.
void BufferManager::Impl::swizzle(const PageGuard& parent, std::uint64_t* slot, std::uint64_t id,
                                  const PageGuard& child) {
  const FrameId pf = parent.frame();
  const FrameId cf = child.frame();
  BufferFrame& p = frames[pf];
  BufferFrame& c = frames[cf];
  if (pf == cf) return;
  const FrameId grandparent = p.parent.load(std::memory_order_acquire);
  const bool parent_swizzled = parent.id() == root.load(std::memory_order_relaxed) ||
                               (grandparent != kNoFrame && grandparent != BufferFrame::kSwizzling);
  if (!parent_swizzled) return;
  FrameId none = kNoFrame;
  if (!c.parent.compare_exchange_strong(none, BufferFrame::kSwizzling, std::memory_order_acq_rel)) {
    return;
  }
  std::uint64_t expected = id;
  if (!atomic_slot(*slot).compare_exchange_strong(expected, swizzled_ref(cf),
                                                  std::memory_order_acq_rel)) {
    c.parent.store(kNoFrame, std::memory_order_release);
    return;
  }
  p.swizzled_children.fetch_add(1, std::memory_order_acq_rel);
  c.parent.store(pf, std::memory_order_release);
  counters.add(BufferEvent::kSwizzles);
}

// --- PageGuard ---

PageGuard::PageGuard(PageGuard&& other) noexcept
    : owner_(other.owner_),
      frame_(other.frame_),
      id_(other.id_),
      mode_(other.mode_),
      data_(other.data_) {
  other.owner_ = nullptr;
}

PageGuard& PageGuard::operator=(PageGuard&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = other.owner_;
    frame_ = other.frame_;
    id_ = other.id_;
    mode_ = other.mode_;
    data_ = other.data_;
    other.owner_ = nullptr;
  }
  return *this;
}

void PageGuard::mark_dirty(Lsn lsn) noexcept {
  header().lsn = lsn;
  owner_->mark_dirty(frame_);
}

void PageGuard::release() noexcept {
  if (owner_ == nullptr) return;
  owner_->unfix(frame_, mode_);
  owner_ = nullptr;
}

// --- BufferManager ---

BufferManager::BufferManager(PageFile& file, BufferOptions options) {
  if (options.frames == 0 || options.frames >= BufferFrame::kSwizzling) {
    throw std::invalid_argument("buffer pool: frame count out of range");
  }
  if (options.page_table == PageTableKind::kSwizzle && !options.child_slots) {
    throw std::invalid_argument("buffer pool: --page-table swizzle needs the engine's child_slots");
  }
  impl_ = std::make_unique<Impl>(*this, file, std::move(options));
}

BufferManager::~BufferManager() = default;

PageGuard BufferManager::fix(PageId id, LatchMode mode) { return impl_->fix(id, mode); }

PageGuard BufferManager::fix_child(const PageGuard& parent, std::uint64_t* slot, LatchMode mode) {
  Impl& m = *impl_;
  if (!m.swizzling()) return m.fix(atomic_slot(*slot).load(std::memory_order_acquire), mode);
  for (;;) {
    const std::uint64_t ref = atomic_slot(*slot).load(std::memory_order_acquire);
    if (!is_swizzled(ref)) {
      PageGuard child = m.fix(ref, mode, parent.frame());
      m.swizzle(parent, slot, ref, child);
      return child;
    }
    // A pin fails while an evictor holds the frame. Once pinned, the frame keeps its page; if
    // the slot still names it, that page is the child (a slot is untagged before its frame is
    // emptied, and tagged only after its frame holds the child), else the child was evicted
    // between our two reads (the evictor needs no exclusive parent latch) and we start over.
    const FrameId f = frame_of(ref);
    BufferFrame& frame = m.frames[f];
    if (frame.try_pin()) {
      if (atomic_slot(*slot).load(std::memory_order_acquire) != ref) {
        frame.unpin();
        m.counters.add(BufferEvent::kFixRetries);
        continue;
      }
      Impl::latch(frame, mode);
      m.counters.add(BufferEvent::kHits);
      m.counters.add(BufferEvent::kSwizzledFixes);
      m.policy->on_hit(f);
      return m.guard(f, frame.page.load(std::memory_order_acquire), mode);
    }
    m.counters.add(BufferEvent::kFixRetries);
    std::this_thread::yield();
  }
}

OptimisticPage BufferManager::read_optimistic(PageId id) const {
  Impl& m = *impl_;
  if (id == m.root.load(std::memory_order_relaxed)) {
    const FrameId f = m.root_frame.load(std::memory_order_relaxed);
    if (f != kNoFrame) {
      if (OptimisticPage page = m.read_resident(f, id)) return page;
    }
  }
  std::uint64_t probes = 0;
  const FrameId f = m.table.lookup(id, probes);
  m.counters.add(BufferEvent::kHashProbes, probes);
  if (f == kNoFrame) return {};
  return m.read_resident(f, id);
}

OptimisticPage BufferManager::read_child_optimistic(const OptimisticPage& parent,
                                                    const std::uint64_t* slot) const {
  Impl& m = *impl_;
  // The slot's place came from bytes that may be changing: read it only if it is a word.
  if (reinterpret_cast<std::uintptr_t>(slot) % alignof(std::uint64_t) != 0) return {};
  auto* word = const_cast<std::uint64_t*>(slot);  // atomic_ref needs a mutable object; not written
  const std::uint64_t ref = atomic_slot(*word).load(std::memory_order_acquire);
  OptimisticPage child;
  if (!is_swizzled(ref)) {
    if (m.swizzling()) return {};  // fix_child() swizzles it, for the readers after this one
    child = read_optimistic(ref);
  } else {
    const FrameId f = frame_of(ref);
    if (f >= m.frame_count) return {};  // not a reference: the parent is changing
    const BufferFrame& frame = m.frames[f];
    const std::uint64_t version = frame.latch.version();
    // As in fix_child(): if the slot still names the frame after its version was read, the
    // frame held the child then (a slot is untagged before its frame is emptied).
    if (FrameLatch::exclusive(version) ||
        atomic_slot(*word).load(std::memory_order_acquire) != ref ||
        frame.page.load(std::memory_order_acquire) == kNoPage) {
      return {};
    }
    m.counters.add(BufferEvent::kHits);
    m.counters.add(BufferEvent::kSwizzledFixes);
    m.policy->on_hit(f);
    child = OptimisticPage(f, version, m.data(f));
  }
  // The parent unchanged after the child's version was read: the reference led to the child.
  if (!child || !validate(parent)) return {};
  return child;
}

bool BufferManager::validate(const OptimisticPage& page) const noexcept {
  return impl_->frames[page.frame_].latch.validate(page.version_);
}

PageGuard BufferManager::fix_new(PageId id) {
  Impl& m = *impl_;
  if (id == kNoPage) throw std::invalid_argument("buffer pool: page 0 is the file's header");
  if (!m.file.extend(id + 1)) {
    throw PageFileError("page file " + m.file.path() + " is full: page " + std::to_string(id) +
                        " is past its maximum of " + std::to_string(m.file.max_pages()) + " pages");
  }
  for (;;) {
    std::uint64_t probes = 0;
    FrameId f = m.table.lookup(id, probes);
    if (f != kNoFrame) {  // freed by the engine but still resident: reuse its frame
      PageGuard g = m.try_fix_resident(f, id, LatchMode::kExclusive);
      if (!g) {
        std::this_thread::yield();
        continue;
      }
      if (m.frames[f].swizzled_children.load() != 0 || m.frames[f].parent.load() != kNoFrame) {
        contract_violation("fix_new() of a page that is still swizzled (drop() it first)");
      }
      std::memset(g.data(), 0, m.page_size);
      m.mark_dirty(f);
      return g;
    }
    f = m.take_frame(kNoFrame);
    BufferFrame& frame = m.frames[f];
    frame.page.store(id, std::memory_order_release);
    if (m.table.insert(id, f) != f) {
      frame.page.store(kNoPage, std::memory_order_release);
      frame.latch.unlock();
      frame.unpin();
      m.release_frame(f);
      continue;
    }
    std::memset(m.data(f), 0, m.page_size);
    m.resident.fetch_add(1, std::memory_order_relaxed);
    {
      std::lock_guard lock(m.policy_mutex);
      m.policy->on_load(f, id);
    }
    m.mark_dirty(f);
    return m.guard(f, id, LatchMode::kExclusive);
  }
}

void BufferManager::drop(PageId id) {
  Impl& m = *impl_;
  for (;;) {
    std::uint64_t probes = 0;
    const FrameId f = m.table.lookup(id, probes);
    if (f == kNoFrame) return;
    BufferFrame& frame = m.frames[f];
    // A pin here is a fix racing from a stale lookup, or (a contract violation) a guard.
    if (!frame.try_claim()) {
      std::this_thread::yield();
      continue;
    }
    if (frame.page.load(std::memory_order_acquire) != id) {
      frame.pins.store(0, std::memory_order_release);
      continue;
    }
    if (frame.parent.load() != kNoFrame || frame.swizzled_children.load() != 0) {
      contract_violation("drop() of a swizzled page or a page with swizzled children");
    }
    frame.latch.lock();
    m.table.erase(id, f);
    {
      std::lock_guard lock(m.policy_mutex);
      m.policy->on_evict(f, id, false);
    }
    m.mark_clean(f);
    frame.page.store(kNoPage, std::memory_order_release);
    m.resident.fetch_sub(1, std::memory_order_relaxed);
    frame.latch.unlock();
    frame.pins.store(0, std::memory_order_release);
    m.release_frame(f);
    return;
  }
}

PageId BufferManager::child_id(std::uint64_t slot) const noexcept {
  if (!is_swizzled(slot)) return slot;
  return impl_->frames[frame_of(slot)].page.load(std::memory_order_acquire);
}

void BufferManager::unswizzle_children(PageGuard& page) {
  Impl& m = *impl_;
  if (!m.swizzling()) return;
  BufferFrame& parent = m.frames[page.frame()];
  if (parent.swizzled_children.load(std::memory_order_acquire) == 0) return;
  m.options.child_slots(page.data(), [&](std::uint64_t& slot) {
    const std::uint64_t ref = atomic_slot(slot).load(std::memory_order_relaxed);
    if (!is_swizzled(ref)) return;
    BufferFrame& child = m.frames[frame_of(ref)];
    atomic_slot(slot).store(child.page.load(std::memory_order_acquire), std::memory_order_release);
    child.parent.store(kNoFrame, std::memory_order_release);
    parent.swizzled_children.fetch_sub(1, std::memory_order_release);
    m.counters.add(BufferEvent::kUnswizzles);
  });
}

void BufferManager::set_root(PageId id) {
  impl_->root_frame.store(kNoFrame, std::memory_order_relaxed);
  impl_->root.store(id, std::memory_order_release);
}

// Each dirty frame: pinned (so it stays, and no eviction writes it meanwhile), latched
// exclusively just long enough for an unswizzled copy, marked clean, then written outside the
// latch. A change after the copy marks the frame dirty again.
std::size_t BufferManager::write_back_all() {
  Impl& m = *impl_;
  std::lock_guard lock(m.write_back_mutex);
  std::size_t written = 0;
  std::byte* copy = scratch_page();
  for (FrameId f = 0; f < m.frame_count; ++f) {
    BufferFrame& frame = m.frames[f];
    if (!frame.dirty.load(std::memory_order_acquire)) continue;
    // An eviction in progress writes the page itself; wait until it is done.
    while (!frame.try_pin()) std::this_thread::yield();
    frame.latch.lock();
    const PageId id = frame.page.load(std::memory_order_relaxed);
    if (id == kNoPage || !frame.dirty.load(std::memory_order_relaxed)) {
      frame.latch.unlock();
      frame.unpin();
      continue;
    }
    m.copy_for_write(f, copy);
    m.mark_clean(f);
    frame.latch.unlock();
    try {
      m.write_copy(id, copy);
    } catch (...) {
      m.mark_dirty(f);
      frame.unpin();
      throw;
    }
    frame.unpin();
    ++written;
  }
  m.file.sync();
  return written;
}

BufferStats BufferManager::stats() const noexcept {
  const Impl& m = *impl_;
  const BufferCounters& c = m.counters;
  BufferStats s;
  s.hits = c.sum(BufferEvent::kHits);
  s.misses = c.sum(BufferEvent::kMisses);
  s.fixes = s.hits + s.misses;  // one counter fewer on the hit path
  s.evictions = c.sum(BufferEvent::kEvictions);
  s.write_backs = c.sum(BufferEvent::kWriteBacks);
  s.swizzles = c.sum(BufferEvent::kSwizzles);
  s.unswizzles = c.sum(BufferEvent::kUnswizzles);
  s.hash_probes = c.sum(BufferEvent::kHashProbes);
  s.swizzled_fixes = c.sum(BufferEvent::kSwizzledFixes);
  s.fix_retries = c.sum(BufferEvent::kFixRetries);
  {
    std::lock_guard lock(m.policy_mutex);
    s.frames_examined = m.policy->frames_examined();
  }
  s.dirty_frames = m.dirty_count.load(std::memory_order_relaxed);
  s.resident_pages = m.resident.load(std::memory_order_relaxed);
  return s;
}

std::size_t BufferManager::frame_count() const noexcept { return impl_->frame_count; }
std::size_t BufferManager::page_size() const noexcept { return impl_->page_size; }
PageTableKind BufferManager::page_table() const noexcept { return impl_->options.page_table; }
EvictionKind BufferManager::eviction() const noexcept { return impl_->options.eviction; }
PageFile& BufferManager::file() noexcept { return impl_->file; }

std::vector<std::pair<std::string, std::string>> BufferManager::policy_state() const {
  std::lock_guard lock(impl_->policy_mutex);
  return impl_->policy->state();
}

void BufferManager::unfix(FrameId frame, LatchMode mode) noexcept {
  BufferFrame& f = impl_->frames[frame];
  Impl::unlatch(f, mode);
  f.unpin();
}

void BufferManager::mark_dirty(FrameId frame) noexcept { impl_->mark_dirty(frame); }

}  // namespace pmcached::buffer

#if defined(__SANITIZE_THREAD__)
// Frame latches are ordered by page (parent before child), not by frame: a frame that held a
// parent holds a leaf later, so TSan's lock-order graph over frames finds cycles that no page
// order has. Lock-order reports through the buffer manager are suppressed in every binary that
// links it; data races are still reported.
extern "C" const char* __tsan_default_suppressions() {
  return "deadlock:pmcached::buffer::BufferManager\n";
}
#endif

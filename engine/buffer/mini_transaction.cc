#include "engine/buffer/mini_transaction.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/buffer/page_checksum.h"

namespace pmcached::buffer {
namespace {

template <typename T>
void put(std::vector<std::byte>& out, const T& value) {
  const auto* bytes = reinterpret_cast<const std::byte*>(&value);
  out.insert(out.end(), bytes, bytes + sizeof value);
}

template <typename T>
T take(std::span<const std::byte>& in) {
  if (in.size() < sizeof(T)) throw std::runtime_error("redo log: a page record is truncated");
  T value;
  std::memcpy(&value, in.data(), sizeof value);
  in = in.subspan(sizeof value);
  return value;
}

// One {u32 offset, u32 length, bytes} run of a page record, checked to lie inside the page after
// its header (in 64 bits: a corrupt record must not wrap around); `what` names it in the error.
struct Run {
  std::uint32_t offset;
  std::span<const std::byte> bytes;
};

Run take_run(std::span<const std::byte>& body, std::size_t page_size, const char* what) {
  const auto offset = take<std::uint32_t>(body);
  const auto length = take<std::uint32_t>(body);
  if (body.size() < length || offset < kPageHeaderSize ||
      std::uint64_t{offset} + length > page_size) {
    throw std::runtime_error(std::string("redo log: a page ") + what + " is out of bounds");
  }
  const Run run{offset, body.first(length)};
  body = body.subspan(length);
  return run;
}

// A page logged whole, as kPageSparseImage: the runs of kImageBlock-aligned blocks after the
// header that hold a non-zero byte. A split or rebuilt page is built in a zeroed buffer, so its
// free space (about half of a page just split) costs nothing in the log.
constexpr std::size_t kImageBlock = 64;

void put_sparse_image(std::vector<std::byte>& out, const std::byte* page, std::size_t page_size) {
  const std::size_t count_at = out.size();
  put(out, std::uint32_t{0});
  std::uint32_t count = 0;
  std::size_t offset = kPageHeaderSize;
  while (offset < page_size) {
    // The next non-zero block, then the end of the run of non-zero blocks from it.
    std::size_t end = std::min((offset / kImageBlock + 1) * kImageBlock, page_size);
    if (all_zero(page + offset, end - offset)) {
      offset = end;
      continue;
    }
    while (end < page_size && !all_zero(page + end, std::min(kImageBlock, page_size - end))) {
      end = std::min(end + kImageBlock, page_size);
    }
    put(out, static_cast<std::uint32_t>(offset));
    put(out, static_cast<std::uint32_t>(end - offset));
    out.insert(out.end(), page + offset, page + end);
    ++count;
    offset = end;
  }
  std::memcpy(out.data() + count_at, &count, sizeof count);
}

}  // namespace

MiniTransaction::MiniTransaction(BufferManager& buffers, RedoLog* log) noexcept
    : buffers_(buffers), log_(log) {}

MiniTransaction::~MiniTransaction() = default;

PageChanges& MiniTransaction::track(PageGuard&& page) {
  if (PageChanges* known = find(page.id())) {
    page.release();  // the transaction already holds this page's latch through its own guard
    return *known;
  }
  const PageId id = page.id();
  std::byte* data = page.data();
  entries_.push_back(std::unique_ptr<Entry>(
      new Entry{std::move(page), PageChanges(id, data, buffers_.page_size())}));
  return entries_.back()->changes;
}

PageChanges& MiniTransaction::track_new(PageGuard&& page) {
  PageChanges& changes = track(std::move(page));
  changes.mark_whole();
  return changes;
}

PageChanges* MiniTransaction::find(PageId id) noexcept {
  for (auto& entry : entries_) {
    if (entry->changes.id() == id) return &entry->changes;
  }
  return nullptr;
}

PageGuard& MiniTransaction::guard(const PageChanges& changes) noexcept {
  for (auto& entry : entries_) {
    if (&entry->changes == &changes) return entry->guard;
  }
  std::abort();  // not one of ours: a programming error
}

Lsn MiniTransaction::finish() {
  Lsn lsn = 0;
  if (log_ != nullptr) {
    const std::size_t page_size = buffers_.page_size();
    std::vector<std::size_t> ends;  // where each record's body ends in scratch_
    std::vector<std::uint16_t> types;
    scratch_.clear();
    for (auto& entry : entries_) {
      PageChanges& changes = entry->changes;
      if (changes.empty()) continue;
      const std::byte* page = changes.page();
      put(scratch_, changes.id());
      // Only new and rebuilt pages are logged whole. Replay may read any other page from the
      // file: a torn write-back there is repaired from the double-write buffer first.
      if (changes.whole()) {
        put_sparse_image(scratch_, page, page_size);
        types.push_back(kPageSparseImage);
      } else {
        put(scratch_, static_cast<std::uint32_t>(changes.moves().size()));
        put(scratch_, static_cast<std::uint32_t>(changes.ranges().size()));
        for (const ByteMove& move : changes.moves()) {
          put(scratch_, move.to);
          put(scratch_, move.from);
          put(scratch_, move.length);
        }
        for (const ByteRange& range : changes.ranges()) {
          put(scratch_, range.offset);
          put(scratch_, range.length);
          scratch_.insert(scratch_.end(), page + range.offset, page + range.offset + range.length);
        }
        types.push_back(kPageRanges);
      }
      ends.push_back(scratch_.size());
    }
    if (!types.empty()) {
      std::vector<LogRecord> records;
      records.reserve(types.size());
      std::size_t begin = 0;
      for (std::size_t i = 0; i < types.size(); ++i) {
        records.push_back(LogRecord{types[i], std::span(scratch_).subspan(begin, ends[i] - begin)});
        begin = ends[i];
      }
      lsn = log_->append(records);
      if (lsn == 0) return 0;  // no room: the caller checkpoints first (see the header)
    }
  }
  for (auto& entry : entries_) {
    if (!entry->changes.empty()) entry->guard.mark_dirty(lsn);
    entry->guard.release();
  }
  entries_.clear();
  return lsn;
}

void MiniTransaction::replay(BufferManager& buffers, Lsn end_lsn,
                             std::span<const LogRecord> records) {
  const std::size_t page_size = buffers.page_size();
  for (const LogRecord& record : records) {
    std::span<const std::byte> body = record.body;
    const auto id = take<PageId>(body);
    if (record.type == kPageSparseImage) {
      // Not read from the file: the image replaces whatever (possibly torn) page is there, from
      // a zeroed page (fix_new) with the record's blocks copied in.
      PageGuard page = buffers.fix_new(id);
      const auto count = take<std::uint32_t>(body);
      for (std::uint32_t i = 0; i < count; ++i) {
        const Run block = take_run(body, page_size, "image block");
        std::memcpy(page.data() + block.offset, block.bytes.data(), block.bytes.size());
      }
      if (!body.empty())
        throw std::runtime_error("redo log: a page image has bytes past its blocks");
      page.mark_dirty(end_lsn);
    } else if (record.type == kPageRanges) {
      PageGuard page = buffers.fix(id, LatchMode::kExclusive);
      const auto moves = take<std::uint32_t>(body);
      const auto count = take<std::uint32_t>(body);
      const bool apply = page.header().lsn < end_lsn;
      for (std::uint32_t i = 0; i < moves; ++i) {
        const auto to = take<std::uint32_t>(body);
        const auto from = take<std::uint32_t>(body);
        const auto length = take<std::uint32_t>(body);
        if (std::min(to, from) < kPageHeaderSize || std::uint64_t{to} + length > page_size ||
            std::uint64_t{from} + length > page_size) {
          throw std::runtime_error("redo log: a page move is out of bounds");
        }
        if (apply) std::memmove(page.data() + to, page.data() + from, length);
      }
      for (std::uint32_t i = 0; i < count; ++i) {
        const Run range = take_run(body, page_size, "range");
        if (apply) std::memcpy(page.data() + range.offset, range.bytes.data(), range.bytes.size());
      }
      if (apply) page.mark_dirty(end_lsn);
    }
    // Other record types belong to the engine; it replays them itself.
  }
}

}  // namespace pmcached::buffer

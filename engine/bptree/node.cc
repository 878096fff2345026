#include "engine/bptree/node.h"

#include <algorithm>
#include <vector>

namespace pmcached::engine::bptree {

int Node::compare(std::string_view key, std::uint32_t head, std::size_t i) const noexcept {
  const Slot s = slot(i);
  if (head != s.head) return head < s.head ? -1 : 1;
  const std::string_view other(reinterpret_cast<const char*>(page_ + s.offset + s.payload_size),
                               s.key_size);
  // Equal heads: the first four bytes are equal unless a key is shorter than four.
  if (key.size() >= 4 && other.size() >= 4) return key.substr(4).compare(other.substr(4));
  return key.compare(other);
}

SearchResult Node::search(std::string_view key) const noexcept {
  const std::uint32_t head = key_head(key);
  std::size_t lo = 0;
  std::size_t hi = count();
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    const int c = compare(key, head, mid);
    if (c == 0) return {mid, true};
    if (c < 0) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return {lo, false};
}

std::size_t Node::child_index(std::string_view key) const noexcept {
  // Keys equal to a separator belong to its right: the first separator greater than the key.
  const SearchResult r = search(key);
  return r.found ? r.index + 1 : r.index;
}

void NodeWriter::init(NodeKind kind, unsigned level) noexcept {
  std::byte header[kSlotsOffset - kKindOffset] = {};
  const auto k = static_cast<std::uint16_t>(kind);
  const auto data_start = static_cast<std::uint32_t>(page_size());
  const auto l = static_cast<std::uint16_t>(level);
  std::memcpy(header + (kKindOffset - kKindOffset), &k, sizeof k);
  std::memcpy(header + (kDataStartOffset - kKindOffset), &data_start, sizeof data_start);
  std::memcpy(header + (kLevelOffset - kKindOffset), &l, sizeof l);
  changes_.write(kKindOffset, header, sizeof header);
}

bool NodeWriter::insert(std::size_t index, std::string_view key, std::span<const std::byte> payload,
                        std::uint16_t flags) noexcept {
  const bool inner = is_inner();
  const std::size_t record = record_size(inner, key.size(), payload.size());
  if (!fits(kSlotSize + record)) return false;
  if (free_contiguous() < kSlotSize + record) compact();

  const std::size_t n = count();
  const std::size_t offset = data_start() - record;
  if (!payload.empty()) changes_.write(offset, payload.data(), payload.size());
  if (!key.empty()) changes_.write(offset + payload.size(), key.data(), key.size());
  if (record > key.size() + payload.size()) {  // inner padding: keep the page deterministic
    changes_.fill(offset + payload.size() + key.size(), std::byte{0},
                  record - key.size() - payload.size());
  }
  set_data_start(offset);

  const std::size_t at = kSlotsOffset + kSlotSize * index;
  if (index < n) changes_.move(at + kSlotSize, at, kSlotSize * (n - index));
  const Slot s{static_cast<std::uint16_t>(offset), static_cast<std::uint16_t>(key.size()),
               static_cast<std::uint16_t>(payload.size()), flags, key_head(key)};
  changes_.store(at, s);
  set_count(n + 1);
  return true;
}

void NodeWriter::erase(std::size_t index) noexcept {
  const std::size_t n = count();
  const Slot s = slot(index);
  const std::size_t record = record_size(is_inner(), s.key_size, s.payload_size);
  if (s.offset == data_start()) {
    set_data_start(data_start() + record);  // the lowest record: the gap just grows
  } else {
    set_fragmented(fragmented() + record);
  }
  const std::size_t at = kSlotsOffset + kSlotSize * index;
  if (index + 1 < n) changes_.move(at, at + kSlotSize, kSlotSize * (n - index - 1));
  set_count(n - 1);
}

bool NodeWriter::replace_payload(std::size_t index, std::span<const std::byte> payload,
                                 std::uint16_t flags) noexcept {
  const Slot s = slot(index);
  if (payload.size() == s.payload_size) {
    if (!payload.empty()) changes_.write(s.offset, payload.data(), payload.size());
    if (flags != s.flags) {
      changes_.store(kSlotsOffset + kSlotSize * index + offsetof(Slot, flags), flags);
    }
    return true;
  }
  const bool inner = is_inner();
  const std::size_t old_entry = entry_size(inner, s.key_size, s.payload_size);
  const std::size_t new_entry = entry_size(inner, s.key_size, payload.size());
  if (new_entry > free_total() + old_entry) return false;
  // The key outlives its slot's erase only as a copy (a compaction may move it).
  char key[kMaxKeySize];
  const std::string_view old_key = this->key(index);
  std::memcpy(key, old_key.data(), old_key.size());
  erase(index);
  return insert(index, std::string_view(key, s.key_size), payload, flags);
}

void NodeWriter::patch_payload(std::size_t index, std::size_t offset,
                               std::span<const std::byte> bytes) noexcept {
  changes_.write(slot(index).offset + offset, bytes.data(), bytes.size());
}

void NodeWriter::compact() noexcept {
  const std::size_t n = count();
  const bool inner = is_inner();
  const std::byte* page = this->page();
  // Records are copied out first: a record may move onto bytes another still occupies.
  std::vector<std::byte> records(node_capacity(page_size()));
  std::vector<Slot> slots(n);
  std::size_t end = records.size();
  for (std::size_t i = 0; i < n; ++i) {
    slots[i] = slot(i);
    const std::size_t size = record_size(inner, slots[i].key_size, slots[i].payload_size);
    end -= size;
    std::memcpy(records.data() + end, page + slots[i].offset, size);
    slots[i].offset = static_cast<std::uint16_t>(kSlotsOffset + end);
  }
  const std::size_t start = kSlotsOffset + end;
  changes_.write(start, records.data() + end, records.size() - end);
  if (n > 0) changes_.write(kSlotsOffset, slots.data(), kSlotSize * n);
  set_data_start(start);
  set_fragmented(0);
}

void for_each_child_slot(std::byte* page, const std::function<void(std::uint64_t& slot)>& visit) {
  if (load_value<std::uint16_t>(page + kKindOffset) !=
      static_cast<std::uint16_t>(NodeKind::kInner)) {
    return;
  }
  const std::size_t n = load_value<std::uint16_t>(page + kCountOffset);
  for (std::size_t i = 0; i < n; ++i) {
    const auto offset = load_value<std::uint16_t>(page + kSlotsOffset + kSlotSize * i);
    visit(*reinterpret_cast<std::uint64_t*>(page + offset));
  }
  visit(*reinterpret_cast<std::uint64_t*>(page + kLinkOffset));
}

}  // namespace pmcached::engine::bptree

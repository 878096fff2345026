// Store::Impl: delete/md, incr/decr/ma, touch and flush_all.
#include <charconv>
#include <cstring>
#include <limits>

#include "engine/pm/pool.h"
#include "engine/store/store_impl.h"

namespace pmcached::engine {
namespace {

bool is_c_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// memcached's safe_strtoull() applied to an item's data (the value followed by "\r\n"):
// leading whitespace and a sign are allowed, the digits must end at whitespace, a NUL or the
// end of the value, overflow is rejected, and so is a negative number that wraps to >= 2^63.
bool parse_counter(std::string_view value, std::uint64_t& out) noexcept {
  if (value.empty()) return false;  // memcached refuses a zero-length value
  std::size_t i = 0;
  while (i < value.size() && is_c_space(value[i])) ++i;
  bool negative = false;
  if (i < value.size() && (value[i] == '+' || value[i] == '-')) negative = value[i++] == '-';
  const std::size_t digits = i;
  std::uint64_t number = 0;
  while (i < value.size() && value[i] >= '0' && value[i] <= '9') {
    const auto d = static_cast<std::uint64_t>(value[i] - '0');
    if (number > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return false;  // ERANGE
    number = number * 10 + d;
    ++i;
  }
  if (i == digits) return false;  // no digits
  const char end = i < value.size() ? value[i] : '\r';
  if (!is_c_space(end) && end != '\0') return false;
  if (negative) {
    number = 0 - number;  // strtoull negates in unsigned arithmetic
    if (static_cast<std::int64_t>(number) < 0) return false;
  }
  out = number;
  return true;
}

}  // namespace

StoreStatus Store::Impl::remove(const DeleteRequest& request) noexcept {
  const std::string_view key = request.key;
  if (key.empty() || key.size() > kMaxKeyLength) return StoreStatus::kNotFound;
  Stripe& stripe = stripes.for_key(key);
  std::lock_guard lock(stripe.mutex);
  const std::int64_t now = clock.now();
  ItemHeader* item = find_live(key, stripe, now);
  if (item == nullptr) {
    stripe.add(Counter::kDeleteMisses);
    return StoreStatus::kNotFound;
  }
  if ((request.has_compare_cas || request.compare_cas != 0) && request.compare_cas != item->cas) {
    stripe.add(Counter::kDeleteMisses);
    return StoreStatus::kExists;
  }
  if (request.drop_value) {
    // md x: replace by an empty item (a tombstone) that keeps the cas unless E gives one.
    // The record is smaller, so no memory has to be reserved.
    ItemHeader* empty = heap.allocate_item(key, 0);
    if (empty == nullptr) return StoreStatus::kOutOfMemory;
    empty->exptime = request.exptime ? to_absolute_exptime(*request.exptime, now) : 0;
    empty->cas = request.new_cas.value_or(item->cas);
    empty->last_update = empty->last_access = now;
    if (!publish(empty, item, 0, stripe)) return StoreStatus::kOutOfMemory;
    item = empty;
  }
  if (request.invalidate) {
    // md I: keep the item, mark it stale, new cas; the next reader may win again. Three fields
    // change, so a copy is published (failure-atomic) rather than editing in place.
    ItemHeader* stale = heap.allocate_item(key, item->value_size);
    if (stale == nullptr) return StoreStatus::kOutOfMemory;
    std::memcpy(stale, item, item->record_size());
    if (request.exptime) stale->exptime = to_absolute_exptime(*request.exptime, now);
    stale->bits |= ItemHeader::kStale;
    stale->bits &= static_cast<std::uint8_t>(~ItemHeader::kTokenSent);
    stale->cas = cas_for(request.new_cas);
    if (!publish(stale, item, 0, stripe)) return StoreStatus::kOutOfMemory;
    return StoreStatus::kDeleted;
  }
  stripe.add(Counter::kDeleteHits);
  if (!request.drop_value) unlink(key, item, stripe);
  return StoreStatus::kDeleted;
}

ArithmeticOutcome Store::Impl::arithmetic(const ArithmeticRequest& request) noexcept {
  ArithmeticOutcome out;
  const std::string_view key = request.key;
  if (key.empty() || key.size() > kMaxKeyLength) return out;
  const bool incr = request.mode == ArithmeticMode::kIncr;
  Stripe& stripe = stripes.for_key(key);
  bool may_grow = true;
  Room room(*this);

  for (int attempt = 1;; ++attempt) {
    std::size_t need = 0;
    {
      std::lock_guard lock(stripe.mutex);
      const std::int64_t now = clock.now();
      ItemHeader* old = find_live(key, stripe, now);
      char digits[24];
      if (old == nullptr) {
        if (!request.vivify_ttl) {
          stripe.add(incr ? Counter::kIncrMisses : Counter::kDecrMisses);
          out.status = StoreStatus::kNotFound;
          return out;
        }
        // ma N: create the item with the initial value J (flags 0, ttl from N).
        const auto len = static_cast<std::size_t>(
            std::to_chars(digits, digits + sizeof digits, request.initial).ptr - digits);
        const std::size_t size = footprint(item_record_size(key.size(), len));
        if (!room.reserve(size)) {
          if (may_grow) {
            need = size;
          } else {
            out.status = StoreStatus::kOutOfMemory;  // memcached: SERVER_ERROR out of memory
            return out;
          }
        } else {
          ItemHeader* item = heap.allocate_item(key, len);
          if (item == nullptr) {
            release(size);
            out.status = StoreStatus::kOutOfMemory;
            return out;
          }
          std::memcpy(item->value_data(), digits, len);
          item->exptime = to_absolute_exptime(*request.vivify_ttl, now);
          item->cas = cas_for(request.new_cas);
          item->last_update = item->last_access = now;
          if (!publish(item, nullptr, size, stripe)) {
            out.status = StoreStatus::kOutOfMemory;
            return out;
          }
          out = {StoreStatus::kStored, request.initial, item->cas, item->exptime, 0, true};
          return out;
        }
      } else {
        // memcached refuses an empty or chunked value as non-numeric before it compares the
        // cas (do_add_delta), and parses the digits only after.
        if (old->value_size == 0 ||
            memcached_item_size(key.size(), old->value_size, old->client_flags) >
                kMemcachedChunkMax) {
          out.status = StoreStatus::kNonNumeric;
          return out;
        }
        if (request.compare_cas != 0 && request.compare_cas != old->cas) {
          out.status = StoreStatus::kExists;
          return out;
        }
        std::uint64_t value = 0;
        if (!parse_counter(old->value(), value)) {
          out.status = StoreStatus::kNonNumeric;
          return out;
        }
        if (incr) {
          value += request.delta;  // wraps modulo 2^64
        } else {
          value = request.delta > value ? 0 : value - request.delta;
        }
        const auto len = static_cast<std::size_t>(
            std::to_chars(digits, digits + sizeof digits, value).ptr - digits);
        // memcached rewrites a number that got no longer in place, padded with spaces to the
        // old length; a longer one gets a new item of exactly its digits.
        const bool same_length = len <= old->value_size;
        const std::size_t value_size = same_length ? old->value_size : len;
        const std::size_t reserve =
            growth(footprint(item_record_size(key.size(), value_size)), footprint(*old));
        if (!room.reserve(reserve)) {
          if (may_grow) {
            need = reserve;
          } else {
            out.status = StoreStatus::kOutOfMemory;
            return out;
          }
        } else {
          ItemHeader* item = heap.allocate_item(key, value_size);
          if (item == nullptr) {
            release(reserve);
            out.status = StoreStatus::kOutOfMemory;
            return out;
          }
          std::memcpy(item->value_data(), digits, len);
          std::memset(item->value_data() + len, ' ', value_size - len);
          item->client_flags = old->client_flags;
          // memcached 1.6.18 applies ma's T to the item it updated in place; a number that
          // grows gets a new item with the old exptime, and T reaches only the reply.
          item->exptime = request.touch_exptime && same_length
                              ? to_absolute_exptime(*request.touch_exptime, now)
                              : old->exptime;
          if (same_length) {
            item->bits = old->bits;  // in place in memcached: the item keeps its state
            item->last_access = old->last_access;
          } else {
            item->last_access = now;
          }
          item->cas = cas_for(request.new_cas);
          item->last_update = now;
          const std::int64_t exptime_before = old->exptime;  // `old` is freed by publish()
          if (!publish(item, old, reserve, stripe)) {
            out.status = StoreStatus::kOutOfMemory;
            return out;
          }
          stripe.add(incr ? Counter::kIncrHits : Counter::kDecrHits);
          out = {StoreStatus::kStored, value, item->cas, item->exptime, exptime_before, false};
          return out;
        }
      }
    }
    if (attempt >= kRoomAttempts || !make_room(need, room)) may_grow = false;
  }
}

StoreStatus Store::Impl::touch(std::string_view key, std::int64_t exptime) noexcept {
  if (key.empty() || key.size() > kMaxKeyLength) return StoreStatus::kNotFound;
  Stripe& stripe = stripes.for_key(key);
  std::lock_guard lock(stripe.mutex);
  const std::int64_t now = clock.now();
  ItemHeader* item = find_live(key, stripe, now);
  stripe.add(Counter::kCmdTouch);
  if (item == nullptr) {
    stripe.add(Counter::kTouchMisses);
    return StoreStatus::kNotFound;
  }
  stripe.add(Counter::kTouchHits);
  set_exptime(*item, to_absolute_exptime(exptime, now));
  item->bits |= ItemHeader::kFetched | ItemHeader::kReferenced;  // memcached's touch bumps
  item->last_access = now;
  return StoreStatus::kTouched;
}

void Store::Impl::flush_all(std::int64_t delay_seconds) noexcept {
  // memcached: oldest_live = realtime(delay) - 1 (or now - 1); when that is already past,
  // oldest_cas takes the next cas so sets after the flush in the same second survive.
  // memcached's realtime() maps an absolute time at or before its process start to 1, so
  // oldest_live becomes 0: no flush at all, also none pending or done before.
  const std::int64_t now = clock.now();
  const bool before_start = delay_seconds > kMaxRelativeExptime && delay_seconds <= process_started;
  const std::int64_t new_oldest =
      before_start ? 1 : delay_seconds > 0 ? to_absolute_exptime(delay_seconds, now) : now;
  const std::int64_t oldest_live = new_oldest - 1;
  const std::uint64_t oldest_cas = oldest_live <= now ? next_cas() : 0;
  flush_state.flush(oldest_live, oldest_cas);
  if (pm::Pool* pool = heap.pool()) {
    pool->set_flush_state(flush_state.oldest_live(), flush_state.oldest_cas());
  }
  cmd_flush.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace pmcached::engine

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

// The decimal digits of `value`, written to `digits`.
std::string_view format_counter(char (&digits)[24], std::uint64_t value) noexcept {
  const char* end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  return {digits, static_cast<std::size_t>(end - digits)};
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
    if (request.count_cas_mismatch) stripe.add(Counter::kDeleteMisses);
    return StoreStatus::kExists;
  }
  Room room(*this);
  if (request.drop_value) {
    // md x: replace by an empty item (a tombstone) that keeps the cas unless E gives one. It is
    // smaller, so nothing is reserved.
    RecordSpec empty;
    empty.key = key;
    empty.exptime = request.exptime ? to_absolute_exptime(*request.exptime, now) : 0;
    empty.cas = request.new_cas.value_or(item->cas);
    empty.last_update = empty.last_access = now;
    const PutResult put = put_record(empty, item, stripe, room);
    if (put.status != PutStatus::kPublished) return StoreStatus::kOutOfMemory;
    item = put.record;
  }
  if (request.invalidate) {
    // md I: keep the item, mark it stale, new cas; the next reader may win again. Three fields
    // change, so a copy is published (failure-atomic) rather than editing in place.
    RecordSpec stale;
    stale.key = key;
    stale.first = item->value();
    stale.client_flags = item->client_flags;
    stale.exptime = request.exptime ? to_absolute_exptime(*request.exptime, now) : item->exptime;
    stale.bits =
        static_cast<std::uint8_t>((item->bits | ItemHeader::kStale) & ~ItemHeader::kTokenSent);
    stale.cas = request.new_cas;
    stale.last_update = item->last_update;
    stale.last_access = item->last_access;
    const PutResult put = put_record(stale, item, stripe, room);
    if (put.status != PutStatus::kPublished) return StoreStatus::kOutOfMemory;
    return StoreStatus::kDeleted;
  }
  stripe.add(Counter::kDeleteHits);
  count(ClassCounter::kDeleteHits, *item);
  if (!request.drop_value) unlink(key, item, stripe);
  return StoreStatus::kDeleted;
}

ArithmeticOutcome Store::Impl::arithmetic(const ArithmeticRequest& request) noexcept {
  ArithmeticOutcome out;
  const std::string_view key = request.key;
  if (key.empty() || key.size() > kMaxKeyLength) return out;
  Stripe& stripe = stripes.for_key(key);
  retry_with_room(stripe, [&](Room& room, bool may_grow) {
    const std::int64_t now = clock.now();
    ItemHeader* old = find_live(key, stripe, now);
    const std::size_t need = old == nullptr
                                 ? create_counter(request, stripe, room, may_grow, now, out)
                                 : update_counter(request, old, stripe, room, may_grow, now, out);
    out.now = now;  // after: the two above assign `out` whole
    return need;
  });
  return out;
}

std::size_t Store::Impl::create_counter(const ArithmeticRequest& request, Stripe& stripe,
                                        Room& room, bool may_grow, std::int64_t now,
                                        ArithmeticOutcome& out) noexcept {
  if (!request.vivify_ttl) {
    const bool incr = request.mode == ArithmeticMode::kIncr;
    stripe.add(incr ? Counter::kIncrMisses : Counter::kDecrMisses);
    out.status = StoreStatus::kNotFound;
    return 0;
  }
  // ma N: create the item with the initial value J (flags 0, ttl from N).
  char digits[24];
  RecordSpec spec;
  spec.key = request.key;
  spec.first = format_counter(digits, request.initial);
  spec.exptime = to_absolute_exptime(*request.vivify_ttl, now);
  spec.cas = request.new_cas;
  spec.last_update = spec.last_access = now;
  const PutResult put = put_record(spec, nullptr, stripe, room);
  if (put.status == PutStatus::kNoRoom && may_grow) return put.need;
  if (put.status != PutStatus::kPublished) {
    out.status = StoreStatus::kOutOfMemory;  // memcached: SERVER_ERROR out of memory
    return 0;
  }
  out = {StoreStatus::kStored, request.initial, put.record->cas, put.record->exptime, 0, true};
  return 0;
}

std::size_t Store::Impl::update_counter(const ArithmeticRequest& request, ItemHeader* old,
                                        Stripe& stripe, Room& room, bool may_grow, std::int64_t now,
                                        ArithmeticOutcome& out) noexcept {
  // memcached refuses an empty or chunked value as non-numeric before it compares the cas
  // (do_add_delta), and parses the digits only after.
  if (old->value_size == 0 || memcached_item_size(request.key.size(), old->value_size,
                                                  old->client_flags) > kMemcachedChunkMax) {
    out.status = StoreStatus::kNonNumeric;
    return 0;
  }
  if (request.compare_cas != 0 && request.compare_cas != old->cas) {
    out.status = StoreStatus::kExists;
    return 0;
  }
  std::uint64_t value = 0;
  if (!parse_counter(old->value(), value)) {
    out.status = StoreStatus::kNonNumeric;
    return 0;
  }
  const bool incr = request.mode == ArithmeticMode::kIncr;
  if (incr) {
    value += request.delta;  // wraps modulo 2^64
  } else {
    value = request.delta > value ? 0 : value - request.delta;
  }
  char digits[24];
  RecordSpec spec;
  spec.key = request.key;
  spec.first = format_counter(digits, value);
  // memcached rewrites a number that got no longer in place, padded with spaces to the old
  // length, and the item keeps its state; a longer one gets a new item of exactly its digits.
  const bool same_length = spec.first.size() <= old->value_size;
  spec.pad = same_length ? old->value_size - spec.first.size() : 0;
  spec.client_flags = old->client_flags;
  // memcached 1.6.18 applies ma's T to the item it updated in place; a number that grows gets
  // a new item with the old exptime, and T reaches only the reply.
  spec.exptime = request.touch_exptime && same_length
                     ? to_absolute_exptime(*request.touch_exptime, now)
                     : old->exptime;
  spec.bits = same_length ? old->bits : 0;
  spec.cas = request.new_cas;
  spec.last_update = now;
  spec.last_access = same_length ? old->last_access : now;
  const std::int64_t exptime_before = old->exptime;  // `old` is freed by publishing
  const std::size_t old_class_size = old->class_size();
  const PutResult put = put_record(spec, old, stripe, room);
  if (put.status == PutStatus::kNoRoom && may_grow) return put.need;
  if (put.status != PutStatus::kPublished) {
    out.status = StoreStatus::kOutOfMemory;
    return 0;
  }
  // memcached rewrites a number that got no longer in place: no new item for total_items.
  if (same_length) stripe.sub(Counter::kTotalItems);
  stripe.add(incr ? Counter::kIncrHits : Counter::kDecrHits);
  count(incr ? ClassCounter::kIncrHits : ClassCounter::kDecrHits, old_class_size);
  out = {StoreStatus::kStored, value, put.record->cas, put.record->exptime, exptime_before, false};
  return 0;
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
  count(ClassCounter::kTouchHits, *item);
  set_exptime(*item, to_absolute_exptime(exptime, now));
  const std::uint8_t bits_before = item->bits;
  const std::int64_t access_before = item->last_access;
  note_access(*item, now);  // memcached's touch bumps as a fetch does
  save_hints(*item, bits_before, access_before);
  return StoreStatus::kTouched;
}

void Store::Impl::flush_all(std::int64_t delay_seconds) noexcept {
  // memcached: oldest_live = realtime(delay) - 1 (or now - 1); when that is already past,
  // oldest_cas takes the next cas so sets after the flush in the same second survive.
  // memcached's realtime() maps an absolute time at or before its process start to 1, so
  // oldest_live becomes 0: no flush at all, also none pending or done before.
  const std::int64_t now = clock.now();
  const bool before_start = delay_seconds > kMaxRelativeExptime && delay_seconds <= process_started;
  const std::int64_t new_oldest = before_start        ? 1
                                  : delay_seconds > 0 ? to_absolute_exptime(delay_seconds, now)
                                                      : now;
  const std::int64_t oldest_live = new_oldest - 1;
  const std::uint64_t oldest_cas = oldest_live <= now ? next_cas() : 0;
  flush_state.flush(oldest_live, oldest_cas);
  if (pool != nullptr) {
    pool->set_flush_state(flush_state.oldest_live(), flush_state.oldest_cas());
  }
  cmd_flush.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace pmcached::engine

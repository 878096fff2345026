// The order in which memcached 1.6.18 applies mg and ma flags.
//
// memcached walks an mg/ma's flags in request order once it has the item: T sets the
// exptime, N sets it on an item this command created, R compares the exptime as it is at
// that point, t prints it as it is at that point, and an O token longer than 32 bytes stops
// the walk with "opaque token too long" -- what came before it is done, what follows is not.
// So `mg k t T30` prints the old TTL and `mg k T30 t` the new one.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>

#include "protocol/command.h"

namespace pmcached::server {

// An O token (with its letter) longer than this fails the command.
inline constexpr std::size_t kMaxOpaqueToken = 32;

inline bool opaque_too_long(const protocol::MetaFlag& flag) noexcept {
  return flag.letter == 'O' && flag.token.size() + 1 > kMaxOpaqueToken;
}

// What the flags before the walk's end ask for, as client exptimes (memcached rules).
struct MetaFlagPlan {
  bool opaque_too_long = false;       // the walk stops at an O token: the command fails
  std::optional<std::int64_t> touch;  // T: the exptime of an item that was found
  std::int64_t created_exptime = 0;   // the exptime of an item the command creates
  bool recache = false;               // R is reached
  bool recache_before_touch = false;  // ... before T
};

inline MetaFlagPlan plan_meta_flags(const protocol::MetaFlags& flags) noexcept {
  MetaFlagPlan plan;
  for (const protocol::MetaFlag& flag : flags.in_order) {
    if (opaque_too_long(flag)) {
      plan.opaque_too_long = true;
      break;
    }
    switch (flag.letter) {
      case 'T':
        plan.touch = flags.ttl;
        plan.created_exptime = flags.ttl;
        break;
      case 'N': plan.created_exptime = flags.vivify_ttl; break;
      case 'R':
        plan.recache = true;
        plan.recache_before_touch = !plan.touch.has_value();
        break;
      default: break;
    }
  }
  return plan;
}

// The absolute exptime the t flag shows (0 = never expires): the item's exptime before the
// command (`before`, 0 for a created item) changed by the T and N flags that precede t.
// `to_absolute` converts a client exptime. nullopt if no t is reached.
template <typename ToAbsolute>
std::optional<std::int64_t> exptime_shown_by_t(const protocol::MetaFlags& flags,
                                               std::int64_t before, bool created,
                                               ToAbsolute to_absolute) {
  std::int64_t current = before;
  for (const protocol::MetaFlag& flag : flags.in_order) {
    if (opaque_too_long(flag)) return std::nullopt;
    switch (flag.letter) {
      case 'T': current = to_absolute(flags.ttl); break;
      case 'N':
        if (created) current = to_absolute(flags.vivify_ttl);
        break;
      case 't': return current;
      default: break;
    }
  }
  return std::nullopt;
}

}  // namespace pmcached::server

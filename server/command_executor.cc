#include "server/command_executor.h"

#include <optional>

#include "protocol/binary_replies.h"
#include "protocol/classic_replies.h"
#include "server/admin_commands.h"
#include "server/meta_flag_order.h"
#include "server/stats_report.h"

namespace pmcached::server {
namespace {

using engine::StoreStatus;
using protocol::Command;
using protocol::CommandKind;
using protocol::Outcome;
using protocol::ReplyWriter;

Outcome to_outcome(StoreStatus status) noexcept {
  switch (status) {
    case StoreStatus::kStored: return Outcome::kStored;
    case StoreStatus::kNotStored: return Outcome::kNotStored;
    case StoreStatus::kExists: return Outcome::kExists;
    case StoreStatus::kNotFound: return Outcome::kNotFound;
    case StoreStatus::kDeleted: return Outcome::kDeleted;
    case StoreStatus::kTouched: return Outcome::kTouched;
    case StoreStatus::kHit: return Outcome::kStored;
    case StoreStatus::kNonNumeric: return Outcome::kNonNumeric;
    case StoreStatus::kTooLarge: return Outcome::kTooLarge;
    case StoreStatus::kOutOfMemory: return Outcome::kOutOfMemory;
  }
  return Outcome::kNotStored;
}

// Server errors are sent even with noreply/q; memcached does the same for these.
bool is_error(StoreStatus status) noexcept {
  return status == StoreStatus::kTooLarge || status == StoreStatus::kOutOfMemory ||
         status == StoreStatus::kNonNumeric;
}

engine::StoreMode classic_mode(CommandKind kind) noexcept {
  switch (kind) {
    case CommandKind::kAdd: return engine::StoreMode::kAdd;
    case CommandKind::kReplace: return engine::StoreMode::kReplace;
    case CommandKind::kAppend: return engine::StoreMode::kAppend;
    case CommandKind::kPrepend: return engine::StoreMode::kPrepend;
    case CommandKind::kCas: return engine::StoreMode::kCas;
    default: return engine::StoreMode::kSet;
  }
}

engine::StoreMode meta_mode(char mode) noexcept {
  switch (mode) {
    case 'E':
    case 'e': return engine::StoreMode::kAdd;
    case 'A':
    case 'a': return engine::StoreMode::kAppend;
    case 'P':
    case 'p': return engine::StoreMode::kPrepend;
    case 'R':
    case 'r': return engine::StoreMode::kReplace;
    default: return engine::StoreMode::kSet;
  }
}

template <typename T>
std::optional<T> optional_if(bool present, T value) {
  return present ? std::optional<T>(value) : std::nullopt;
}

// memcached's cmd= word of a storage mode in mutation log lines.
std::string_view mode_word(engine::StoreMode mode) noexcept {
  switch (mode) {
    case engine::StoreMode::kAdd: return "add";
    case engine::StoreMode::kReplace: return "replace";
    case engine::StoreMode::kAppend: return "append";
    case engine::StoreMode::kPrepend: return "prepend";
    case engine::StoreMode::kCas: return "cas";
    default: return "set";
  }
}

// memcached's per-item header, cas and terminators; `me` reports sizes the way it does.
constexpr std::size_t kItemOverhead = 48 + 8 + 1 + 2;

// The TTL mg/ma's t flag prints. memcached prints (exptime - now) as an unsigned 32-bit
// number of its process-relative clock, so an exptime already past (T-1, or an absolute
// time before its start, which it stores as 1) shows as a number near 2^32.
std::int64_t shown_ttl(std::int64_t exptime, std::int64_t now, std::int64_t started_at) noexcept {
  if (exptime == 0) return -1;
  if (exptime >= now) return exptime - now;
  const std::int64_t process_started = started_at - 62;  // memcached: start - 60 - 2
  const std::int64_t relative = exptime <= process_started ? 1 : exptime - process_started;
  return static_cast<std::uint32_t>(relative - (now - process_started));
}

}  // namespace

CommandExecutor::CommandExecutor(ServerContext& context, ThreadStats& thread_stats)
    : context_(context), thread_stats_(thread_stats), monitor_(context.admin) {}

void CommandExecutor::request_shutdown() const {
  if (context_.request_shutdown) context_.request_shutdown();
}

AfterCommand CommandExecutor::execute(const Command& command, std::string& out) {
  if (command.binary.active) {
    protocol::BinaryReplies replies(out, command);
    return execute_classic(command, replies);
  }
  ReplyWriter writer(out);
  switch (command.kind) {
    case CommandKind::kShutdown:
      if (!context_.options.enable_shutdown) {
        writer.raw(protocol::reply::kShutdownDisabled);
        break;
      }
      // The argument is in `key`: none, or "graceful" (both drain connections here).
      if (!command.key.empty() && command.key != "graceful") {
        writer.raw(protocol::reply::kBadShutdownMode);
        break;
      }
      return AfterCommand::kShutdown;
    case CommandKind::kMetaGet: meta_get(command, writer); break;
    case CommandKind::kMetaSet: meta_set(command, writer); break;
    case CommandKind::kMetaDelete: meta_delete(command, writer); break;
    case CommandKind::kMetaArithmetic: meta_arithmetic(command, writer); break;
    case CommandKind::kMetaNoop:
      thread_stats_.add(thread_stats_.cmd_meta, 1);
      writer.raw(protocol::reply::kMetaNoop);
      break;
    case CommandKind::kMetaDebug: meta_debug(command, writer); break;
    case CommandKind::kLruCrawler:
    case CommandKind::kSlabs:
    case CommandKind::kCacheMemlimit:
    case CommandKind::kWatch: return run_admin_command(context_, command, out);
    default: {
      protocol::TextReplies replies(writer, command);
      return execute_classic(command, replies);
    }
  }
  return AfterCommand::kContinue;
}

AfterCommand CommandExecutor::execute_classic(const Command& command,
                                              protocol::ClassicReplies& replies) {
  engine::Store& store = context_.store;
  switch (command.kind) {
    case CommandKind::kGet:
    case CommandKind::kGets:
    case CommandKind::kGat:
    case CommandKind::kGats: retrieve(command, replies); break;
    case CommandKind::kSet:
    case CommandKind::kAdd:
    case CommandKind::kReplace:
    case CommandKind::kAppend:
    case CommandKind::kPrepend:
    case CommandKind::kCas: this->store(command, replies); break;
    case CommandKind::kDelete: {
      engine::DeleteRequest request;
      request.key = command.key;
      request.compare_cas = command.cas_unique;  // binary DELETE's cas; 0 for text
      request.count_cas_mismatch = false;
      monitor_.delete_requested(command.key);
      replies.outcome(to_outcome(store.remove(request)), 0);
      break;
    }
    case CommandKind::kIncr:
    case CommandKind::kDecr: arithmetic(command, replies); break;
    case CommandKind::kTouch:
      replies.outcome(to_outcome(store.touch(command.key, command.exptime)), 0);
      break;
    case CommandKind::kFlushAll:
      store.flush_all(command.delay);
      replies.ok();
      break;
    case CommandKind::kStats:
      scratch_.clear();
      // The admin groups (conns, detail, sizes, cachedump) are text-only for now: binary STAT
      // does not split its key into the tokens they read.
      if (command.binary.active || !write_admin_stats(context_, command, scratch_)) {
        ReplyWriter text(scratch_);
        write_stats(context_, command.stats_group, text);
      }
      replies.stats(scratch_);
      break;
    case CommandKind::kVersion: replies.version(kVersionText); break;
    case CommandKind::kVerbosity:
      context_.verbosity.store(static_cast<int>(command.verbosity));
      replies.ok();
      break;
    case CommandKind::kNoop: replies.ok(); break;
    case CommandKind::kQuit: replies.quit(); return AfterCommand::kClose;
    default: break;  // shutdown and meta commands: execute() serves them
  }
  return AfterCommand::kContinue;
}

void CommandExecutor::retrieve(const Command& command, protocol::ClassicReplies& replies) {
  const bool touch = command.kind == CommandKind::kGat || command.kind == CommandKind::kGats;
  engine::GetRequest request;
  request.mark_win = false;  // only mg hands out recache win tokens (W); get/gets never do
  if (touch) request.touch_exptime = command.exptime;
  request.count_get = !touch;
  for (std::string_view key : command.keys) {
    request.key = key;
    bool found = false;
    (void)context_.store.get(request, [&](const engine::ItemView& item) {
      found = true;
      monitor_.fetched(key, &item, /*classic=*/true);
      replies.hit(item.key, item.client_flags, item.value, item.cas);
    });
    if (!found) {
      monitor_.fetched(key, nullptr, /*classic=*/true);
      replies.miss(key);
    }
  }
  replies.end();
}

void CommandExecutor::store(const Command& command, protocol::ClassicReplies& replies) {
  monitor_.store_requested(command.key);
  const engine::StoreMode mode = classic_mode(command.kind);
  if (command.too_large) {
    thread_stats_.add(thread_stats_.store_too_large, 1);
    monitor_.stored(mode_word(mode), command.key, StoreStatus::kTooLarge, 0, 0, 0);
    // memcached unlinks the old item of a refused set, so no client reads stale data.
    if (command.kind == CommandKind::kSet) {
      engine::DeleteRequest drop;
      drop.key = command.key;
      (void)context_.store.remove(drop);
    }
    replies.outcome(Outcome::kTooLarge, 0);
    return;
  }
  const engine::StoreRequest request = store_request(command);
  const engine::StoreOutcome result = context_.store.store(request);
  note_stored(request, result);
  replies.outcome(to_outcome(result.status), result.cas);
}

engine::StoreRequest CommandExecutor::store_request(const Command& command) {
  engine::StoreRequest request;
  request.mode = classic_mode(command.kind);
  request.key = command.key;
  request.value = command.data;
  request.client_flags = command.client_flags;
  request.exptime = command.exptime;
  // cas; for binary requests the header's cas, which makes set and replace a cas and is
  // checked by append and prepend.
  request.compare_cas = command.cas_unique;
  return request;
}

bool CommandExecutor::defer_set(const Command& command, DeferredSet& set) {
  if (command.too_large) return false;
  set.kind = command.kind;
  if (command.kind == CommandKind::kMetaSet) {
    if (command.meta.base64_key) return false;
    thread_stats_.add(thread_stats_.cmd_meta, 1);
    set.request = meta_store_request(command);
    set.meta = command.meta;
    return true;
  }
  if (command.kind != CommandKind::kSet) return false;
  monitor_.store_requested(command.key);
  set.request = store_request(command);
  set.noreply = command.noreply;
  set.binary = command.binary;
  return true;
}

void CommandExecutor::finish_set(const DeferredSet& set, const engine::StoreOutcome& outcome,
                                 std::string& out) {
  note_stored(set.request, outcome);
  if (set.kind == CommandKind::kMetaSet) {
    ReplyWriter writer(out);
    meta_set_reply(set.meta, set.request.key, outcome, writer);
  } else if (set.binary.active) {
    protocol::BinaryReplies(out, set.binary).outcome(to_outcome(outcome.status), outcome.cas);
  } else if (!set.noreply) {
    ReplyWriter(out).outcome(to_outcome(outcome.status));
  }
}

void CommandExecutor::note_stored(const engine::StoreRequest& request,
                                  const engine::StoreOutcome& result) {
  if (result.status == StoreStatus::kTooLarge) thread_stats_.add(thread_stats_.store_too_large, 1);
  if (result.status == StoreStatus::kOutOfMemory) {
    thread_stats_.add(thread_stats_.store_no_memory, 1);
  }
  if (!context_.admin.watchers.wants(protocol::kWatchMutations)) return;
  const std::int64_t now = context_.store.now();
  const std::int64_t exptime = engine::Store::absolute_exptime(request.exptime, now);
  const std::int64_t ttl = exptime == 0 ? 0 : exptime - now;
  const std::size_t size =
      result.status == StoreStatus::kStored ? result.value_size : request.value.size();
  monitor_.stored(mode_word(request.mode), request.key, result.status, ttl, size,
                  context_.store.class_id(request.key.size(), size, request.client_flags));
}

void CommandExecutor::arithmetic(const Command& command, protocol::ClassicReplies& replies) {
  engine::ArithmeticRequest request;
  request.key = command.key;
  request.mode = command.kind == CommandKind::kIncr ? engine::ArithmeticMode::kIncr
                                                    : engine::ArithmeticMode::kDecr;
  request.delta = command.delta;
  request.compare_cas = command.cas_unique;  // binary only; 0 for text
  if (command.binary.create) {
    // A binary incr/decr miss creates the item with the initial value (flags 0).
    request.vivify_ttl = command.exptime;
    request.initial = command.binary.initial;
  }
  const engine::ArithmeticOutcome result = context_.store.arithmetic(request);
  if (result.status == StoreStatus::kStored) {
    replies.number(result.value, result.cas);
  } else {
    replies.outcome(to_outcome(result.status), 0);
  }
}

void CommandExecutor::meta_get(const Command& command, ReplyWriter& writer) {
  thread_stats_.add(thread_stats_.cmd_meta, 1);
  const protocol::MetaFlags& flags = command.meta;
  const MetaFlagPlan plan = plan_meta_flags(flags);
  engine::GetRequest request;
  request.key = command.key;
  request.touch_exptime = plan.touch;
  request.count_get = !plan.touch.has_value();
  request.touch_miss_is_get_miss = true;
  // memcached bumps a locked item (h l T N R) only after a successful reply.
  const bool locked = flags.return_hit || flags.return_last_access || flags.has_ttl ||
                      flags.has_vivify || flags.has_recache;
  request.bump = !flags.no_bump && !(plan.opaque_too_long && locked);
  request.vivify_ttl = optional_if(flags.has_vivify, plan.created_exptime);
  request.recache_below = optional_if(plan.recache, flags.recache_ttl);
  request.recache_before_touch = plan.recache_before_touch;
  request.mark_win = !plan.opaque_too_long;

  protocol::MetaItem meta;
  std::int64_t last_access = 0;
  const engine::GetOutcome outcome = context_.store.get(request, [&](const engine::ItemView& item) {
    monitor_.fetched(command.key, &item, /*classic=*/false);
    if (flags.return_value) scratch_.assign(item.value);
    meta.client_flags = item.client_flags;
    meta.cas = item.cas;
    last_access = item.last_access;
    meta.hit_before = item.fetched;
    meta.size = item.value.size();
    meta.binary_key = item.binary_key;  // memcached echoes the key as the item was stored
  });
  if (outcome.status != StoreStatus::kHit) monitor_.fetched(command.key, nullptr, false);
  if (plan.opaque_too_long) {
    writer.raw(protocol::reply::kOpaqueTooLong);
    return;
  }
  meta.key = command.key;
  if (outcome.status != StoreStatus::kHit) {
    if (!flags.quiet) writer.meta_get_miss(flags, command.key);
    return;
  }
  // Every time shown is against the clock reading the store served the request at, the one a
  // touch (T) used: a second ticking in between must not show T50 as t51.
  const std::int64_t now = outcome.now;
  meta.last_access_age = now - last_access;
  const auto to_absolute = [&](std::int64_t t) { return engine::Store::absolute_exptime(t, now); };
  meta.ttl = shown_ttl(
      exptime_shown_by_t(flags, outcome.exptime_before, outcome.vivified, to_absolute).value_or(0),
      now, context_.started_at);
  meta.value = flags.return_value ? std::string_view(scratch_) : std::string_view();
  meta.won = outcome.won;
  meta.stale = outcome.stale;
  meta.token_sent = outcome.token_sent;
  writer.meta_get_hit(flags, meta);
}

void CommandExecutor::meta_set(const Command& command, ReplyWriter& writer) {
  thread_stats_.add(thread_stats_.cmd_meta, 1);
  const protocol::MetaFlags& flags = command.meta;
  if (command.too_large) {
    thread_stats_.add(thread_stats_.store_too_large, 1);
    monitor_.stored(mode_word(meta_mode(flags.mode)), command.key, StoreStatus::kTooLarge, 0, 0, 0);
    // memcached unlinks the old item of any ms it refuses, whatever the mode.
    engine::DeleteRequest drop;
    drop.key = command.key;
    (void)context_.store.remove(drop);
    writer.outcome(Outcome::kTooLarge);
    return;
  }
  const engine::StoreRequest request = meta_store_request(command);
  const engine::StoreOutcome result = context_.store.store(request);
  note_stored(request, result);
  meta_set_reply(command.meta, command.key, result, writer);
}

engine::StoreRequest CommandExecutor::meta_store_request(const Command& command) {
  const protocol::MetaFlags& flags = command.meta;
  engine::StoreRequest request;
  request.mode = meta_mode(flags.mode);
  // C turns set and replace into cas (C0 included: it compares against cas 0).
  if (flags.has_compare_cas &&
      (request.mode == engine::StoreMode::kSet || request.mode == engine::StoreMode::kReplace)) {
    request.mode = engine::StoreMode::kCas;
  }
  request.key = command.key;
  request.value = command.data;
  request.client_flags = flags.client_flags;
  request.exptime = flags.has_ttl ? flags.ttl : 0;
  request.compare_cas = flags.has_compare_cas ? flags.compare_cas : 0;
  request.invalidate = flags.invalidate;
  request.binary_key = flags.base64_key;
  request.unlink_on_refusal = true;
  return request;
}

void CommandExecutor::meta_set_reply(const protocol::MetaFlags& flags, std::string_view key,
                                     const engine::StoreOutcome& result, ReplyWriter& writer) {
  if (is_error(result.status)) {
    writer.outcome(to_outcome(result.status));
    return;
  }
  if (flags.quiet && result.status == StoreStatus::kStored) return;
  protocol::MetaItem meta;
  meta.key = key;
  meta.binary_key = flags.base64_key;
  meta.cas = result.cas;
  writer.meta_status(protocol::meta_code(to_outcome(result.status)), flags, meta,
                     ReplyWriter::kMsItemFlags);
}

void CommandExecutor::meta_delete(const Command& command, ReplyWriter& writer) {
  thread_stats_.add(thread_stats_.cmd_meta, 1);
  const protocol::MetaFlags& flags = command.meta;
  engine::DeleteRequest request;
  request.key = command.key;
  request.compare_cas = flags.compare_cas;
  request.has_compare_cas = flags.has_compare_cas;  // C0 compares against cas 0
  request.invalidate = flags.invalidate;
  request.exptime = optional_if(flags.has_ttl && flags.invalidate, flags.ttl);
  const StoreStatus status = context_.store.remove(request);
  if (flags.quiet && status == StoreStatus::kDeleted) return;
  protocol::MetaItem meta;
  meta.key = command.key;
  meta.binary_key = flags.base64_key;
  writer.meta_status(protocol::meta_code(to_outcome(status)), flags, meta, {});
}

void CommandExecutor::meta_arithmetic(const Command& command, ReplyWriter& writer) {
  thread_stats_.add(thread_stats_.cmd_meta, 1);
  const protocol::MetaFlags& flags = command.meta;
  const MetaFlagPlan plan = plan_meta_flags(flags);
  engine::ArithmeticRequest request;
  request.key = command.key;
  request.mode = (flags.mode == 'D' || flags.mode == 'd' || flags.mode == '-')
                     ? engine::ArithmeticMode::kDecr
                     : engine::ArithmeticMode::kIncr;
  request.delta = flags.has_delta ? flags.delta : 1;
  // memcached's ma treats C0 as "no compare" (unlike ms and md).
  request.compare_cas = flags.has_compare_cas ? flags.compare_cas : 0;
  request.vivify_ttl = optional_if(flags.has_vivify, plan.created_exptime);
  request.initial = flags.has_initial ? flags.initial : 0;
  request.touch_exptime = plan.touch;
  const engine::ArithmeticOutcome result = context_.store.arithmetic(request);

  if (result.status == StoreStatus::kNonNumeric) {
    writer.outcome(Outcome::kNonNumeric);
    return;
  }
  if (result.status == StoreStatus::kTooLarge || result.status == StoreStatus::kOutOfMemory) {
    writer.raw(protocol::reply::kMetaOutOfMemory);
    return;
  }
  // memcached checks the opaque while it writes the reply: after the arithmetic.
  if (plan.opaque_too_long) {
    writer.raw(protocol::reply::kOpaqueTooLong);
    return;
  }
  protocol::MetaItem meta;
  meta.key = command.key;
  meta.binary_key = flags.base64_key;
  if (result.status != StoreStatus::kStored) {
    writer.meta_status(protocol::meta_code(to_outcome(result.status)), flags, meta, {});
    return;
  }
  // q silences an update's HD, not the reply to an item N created.
  if (flags.quiet && !result.created) return;
  const std::int64_t now = result.now;
  const auto to_absolute = [&](std::int64_t t) { return engine::Store::absolute_exptime(t, now); };
  meta.cas = result.cas;
  meta.ttl = shown_ttl(
      exptime_shown_by_t(flags, result.exptime_before, result.created, to_absolute).value_or(0),
      now, context_.started_at);
  if (flags.return_value) {
    scratch_ = std::to_string(result.value);
    meta.value = scratch_;
    writer.meta_value(flags, meta);
  } else {
    writer.meta_status("HD", flags, meta, ReplyWriter::kMaItemFlags);
  }
}

void CommandExecutor::meta_debug(const Command& command, ReplyWriter& writer) {
  thread_stats_.add(thread_stats_.cmd_meta, 1);
  const std::int64_t now = context_.store.now();
  engine::GetRequest request;
  request.key = command.key;
  request.bump = false;
  request.mark_win = false;
  protocol::MetaItem meta;
  std::size_t total_size = 0;
  bool binary_key = command.meta.base64_key;
  const engine::GetOutcome outcome = context_.store.get(request, [&](const engine::ItemView& item) {
    meta.cas = item.cas;
    // memcached 1.6.18 prints exp as now - exptime: the remaining TTL negated (-1: none).
    meta.ttl = item.exptime == 0 ? -1 : now - item.exptime;
    meta.last_access_age = now - item.last_access;
    meta.hit_before = item.fetched;
    meta.size_class = item.size_class;
    total_size = kItemOverhead + item.key.size() + item.value.size();
    binary_key = binary_key || item.binary_key;  // memcached echoes a binary key in base64
  });
  if (outcome.status != StoreStatus::kHit) {
    writer.raw(protocol::reply::kMetaMiss);
    return;
  }
  writer.meta_debug(command.key, binary_key, meta, total_size);
}

}  // namespace pmcached::server

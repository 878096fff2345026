// CommandExecutor: runs one parsed command against the store and appends its reply.
//
// This is where protocol meets storage: a Command goes in, the store's neutral outcome is
// turned into wire text by protocol::ReplyWriter. No I/O, so it is unit-tested directly.
// The classic commands run once for both wire formats: a text command replies through
// protocol::TextReplies, a binary request (command.binary.active) through BinaryReplies.
//
// Thread safety: one executor per worker thread (it owns a scratch buffer and writes its
// thread's counters); the store and ServerContext it refers to are shared and thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "config/options.h"
#include "engine/open_store.h"
#include "engine/store/store.h"
#include "protocol/classic_replies.h"
#include "protocol/command.h"
#include "protocol/reply_writer.h"
#include "server/admin_state.h"
#include "server/command_monitor.h"
#include "server/server_stats.h"

namespace pmcached::server {

// State shared by all executors of one server.
struct ServerContext {
  engine::Store& store;
  ServerStats& stats;
  const config::Options& options;
  std::int64_t started_at = 0;             // Unix seconds
  std::function<void()> request_shutdown;  // `shutdown` with -A
  std::atomic<int> verbosity{0};
  const engine::OpenStore* storage = nullptr;  // recovery report, pm statistics (stats pm)
  AdminState admin{};                          // admin and monitoring commands
};

// A set that waits for the group commit (CommandExecutor::defer_set): its store request and
// what its reply needs of its command, which parses on meanwhile. Views point into the input the
// command was parsed from.
struct DeferredSet {
  engine::StoreRequest request;
  protocol::CommandKind kind = protocol::CommandKind::kSet;
  bool noreply = false;          // a text set's
  protocol::BinaryFrame binary;  // a binary SET/SETQ's
  protocol::MetaFlags meta;      // an ms's (reused: its flag vector keeps its capacity)
};

// What the connection does after a command.
// kWatch: the connection becomes a log watcher (`watch`; the flags are in the command).
enum class AfterCommand : std::uint8_t { kContinue, kClose, kShutdown, kWatch };

class CommandExecutor {
 public:
  CommandExecutor(ServerContext& context, ThreadStats& thread_stats);

  // Executes `command`, appending its reply (if any) to `out`.
  AfterCommand execute(const protocol::Command& command, std::string& out);

  // Group commit (server/set_batch.h): whether `command` is a set that may wait to be stored
  // with others: a text `set`, a binary SET or SETQ, or an `ms`, unless it was refused as too
  // large or its key is base64 (`ms ... b`: the decoded key lives in the command, which the next
  // parse overwrites). If so, `set` is filled in and the command counted as execute() would
  // count it; the caller stores set.request, then calls finish_set.
  bool defer_set(const protocol::Command& command, DeferredSet& set);
  // Appends the reply to a deferred set (none if it was `noreply`, quiet, or a quiet binary
  // one that succeeded) to `out`, once the store has given its outcome.
  void finish_set(const DeferredSet& set, const engine::StoreOutcome& outcome, std::string& out);

  // Asks the server to shut down (the `shutdown` command, once its reply is queued).
  void request_shutdown() const;

  // The connection whose commands run next (log watchers name it by descriptor).
  void set_client_fd(int fd) noexcept { monitor_.set_client_fd(fd); }
  [[nodiscard]] ServerContext& context() noexcept { return context_; }

 private:
  AfterCommand execute_classic(const protocol::Command& command, protocol::ClassicReplies& replies);
  void retrieve(const protocol::Command& command, protocol::ClassicReplies& replies);
  void store(const protocol::Command& command, protocol::ClassicReplies& replies);
  void arithmetic(const protocol::Command& command, protocol::ClassicReplies& replies);
  void meta_get(const protocol::Command& command, protocol::ReplyWriter& writer);
  void meta_set(const protocol::Command& command, protocol::ReplyWriter& writer);
  void meta_set_reply(const protocol::MetaFlags& flags, std::string_view key,
                      const engine::StoreOutcome& result, protocol::ReplyWriter& writer);
  void meta_delete(const protocol::Command& command, protocol::ReplyWriter& writer);
  void meta_arithmetic(const protocol::Command& command, protocol::ReplyWriter& writer);
  void meta_debug(const protocol::Command& command, protocol::ReplyWriter& writer);
  // The store request of a storage command, and of an ms.
  static engine::StoreRequest store_request(const protocol::Command& command);
  static engine::StoreRequest meta_store_request(const protocol::Command& command);
  // Counts a refused store and tells the log watchers what a storage command did.
  void note_stored(const engine::StoreRequest& request, const engine::StoreOutcome& result);

  ServerContext& context_;
  ThreadStats& thread_stats_;
  std::string scratch_;  // reused copy of a value for meta replies; stats text
  CommandMonitor monitor_;
};

}  // namespace pmcached::server

// Command: one parsed memcached text or meta command.
//
// All string_views point into the input buffer that was given to Parser::parse() (or,
// for base64 meta keys, into the Command's own `decoded_key` storage). They stay valid
// until that buffer is consumed or changed, and the Command is not moved.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pmcached::protocol {

enum class CommandKind : std::uint8_t {
  // Retrieval (classic).
  kGet,
  kGets,
  kGat,
  kGats,
  // Storage (classic); each carries a data block.
  kSet,
  kAdd,
  kReplace,
  kAppend,
  kPrepend,
  kCas,
  // Others (classic).
  kDelete,
  kIncr,
  kDecr,
  kTouch,
  kFlushAll,
  kStats,
  kVersion,
  kVerbosity,
  kQuit,
  kShutdown,
  // Meta.
  kMetaGet,         // mg
  kMetaSet,         // ms (carries a data block)
  kMetaDelete,      // md
  kMetaArithmetic,  // ma
  kMetaNoop,        // mn
  kMetaDebug,       // me
  // Admin and monitoring (admin_parser.cc; the verb and arguments are in `admin`).
  kLruCrawler,     // lru_crawler crawl|metadump|tocrawl|sleep|enable|disable
  kSlabs,          // slabs reassign|automove
  kCacheMemlimit,  // cache_memlimit <megabytes> [noreply]
  kWatch,          // watch [event kinds...]
  // Binary protocol only.
  kNoop,  // NOOP
};

// What an admin command asks for. The parser answers memcached's syntax errors itself; the
// server judges the values (class ids, limits) and answers the rest.
enum class AdminVerb : std::uint8_t {
  kNone,
  kCrawl,          // lru_crawler crawl <classes>
  kMetadump,       // lru_crawler metadump <classes>
  kTocrawl,        // lru_crawler tocrawl <n>
  kSleep,          // lru_crawler sleep <microseconds>
  kEnable,         // lru_crawler enable
  kDisable,        // lru_crawler disable
  kReassign,       // slabs reassign <source> <destination>
  kAutomove,       // slabs automove <0|1|2> (a level above 2 is the server's ERROR)
  kAutomoveRatio,  // slabs automove ratio <ratio> <any>
};

// memcached's log-watcher event kinds (`watch fetchers mutations ...`), as bits.
enum WatchFlag : std::uint16_t {
  kWatchRawcmds = 1u << 0,
  kWatchEvictions = 1u << 1,
  kWatchFetchers = 1u << 2,
  kWatchMutations = 1u << 3,
  kWatchSysevents = 1u << 4,
  kWatchConnevents = 1u << 5,
  kWatchProxyreqs = 1u << 6,
  kWatchProxyevents = 1u << 7,
  kWatchProxyuser = 1u << 8,
};

struct AdminArgs {
  AdminVerb verb = AdminVerb::kNone;
  std::string_view classes;      // crawl, metadump: "all" or "1,2,..." as sent
  std::uint32_t number = 0;      // tocrawl, sleep, automove level, cache_memlimit megabytes
  std::int32_t source = 0;       // slabs reassign
  std::int32_t destination = 0;  // slabs reassign
  double ratio = 0;              // slabs automove ratio
  std::uint16_t watch = 0;       // watch: WatchFlag bits
  // stats cachedump <class> <limit>: the class is in `number`; `bad_number` if either is not one.
  std::uint32_t limit = 0;
  bool bad_number = false;
};

// One meta flag as sent: its letter and its token (empty if none), in request order.
struct MetaFlag {
  char letter;
  std::string_view token;
};

// Meta flags, decoded once by the parser. The raw list keeps request order because
// responses echo flags in the order they were asked for.
struct MetaFlags {
  std::vector<MetaFlag> in_order;

  bool base64_key = false;          // b
  bool return_cas = false;          // c
  bool return_flags = false;        // f
  bool return_hit = false;          // h
  bool return_key = false;          // k
  bool return_last_access = false;  // l
  bool quiet = false;               // q
  bool return_size = false;         // s
  bool return_ttl = false;          // t
  bool no_bump = false;             // u
  bool return_value = false;        // v
  bool invalidate = false;          // I

  bool has_opaque = false;  // O(token)
  std::string_view opaque;
  bool has_compare_cas = false;  // C(token)
  std::uint64_t compare_cas = 0;
  bool has_client_flags = false;  // F(token)
  std::uint32_t client_flags = 0;
  bool has_ttl = false;  // T(token)
  std::int64_t ttl = 0;
  bool has_vivify = false;  // N(token)
  std::int64_t vivify_ttl = 0;
  bool has_recache = false;  // R(token)
  std::int64_t recache_ttl = 0;
  bool has_initial = false;  // J(token) (ma)
  std::uint64_t initial = 0;
  bool has_delta = false;  // D(token) (ma)
  std::uint64_t delta = 1;
  char mode = 0;  // M(token): ms E/A/P/R/S, ma I/+/D/-; 0 = default
};

// What a binary-protocol request adds to its Command (binary_parser.h): the reply's envelope
// and the fields text commands do not have. `active` is false for text and meta commands.
struct BinaryFrame {
  bool active = false;
  std::uint8_t opcode = 0;  // as sent, quiet variants included (echoed in the reply)
  std::uint32_t opaque = 0;
  bool quiet = false;         // a q opcode: success replies (and get misses) are not sent
  bool create = false;        // incr/decr: create the item on a miss (expiration != 0xffffffff)
  std::uint64_t initial = 0;  // incr/decr: the value of an item created on a miss
};

struct Command {
  CommandKind kind = CommandKind::kGet;

  // Single-key commands use `key`; get/gets/gat/gats use `keys`. For kShutdown, `key`
  // holds the argument text ("" or "graceful"; anything else is memcached's invalid mode).
  std::string_view key;
  std::vector<std::string_view> keys;

  std::uint32_t client_flags = 0;  // storage commands
  std::int64_t exptime = 0;        // storage, touch, gat/gats
  std::uint64_t cas_unique = 0;    // cas; binary: the header's cas (0 = none) of any command
  std::uint64_t delta = 0;         // incr/decr
  std::int64_t delay = 0;          // flush_all [delay]
  std::uint32_t verbosity = 0;     // verbosity level
  bool noreply = false;            // classic noreply
  bool too_large = false;          // storage: refused (data swallowed, `data` empty), and
                                   // `key` points into `decoded_key`
  bool key_too_long = false;       // get/gets/gat/gats: a key over the limit ended `keys`.
                                   // memcached still looks up (and gat touches) the keys
                                   // before it, then answers only the error.

  std::string_view data;         // the data block without its "\r\n"
  std::string_view stats_group;  // all text after "stats", trimmed: "", "settings",
                                 // "items", "reset", "engine", "detail dump", ...
                                 // (its tokens, up to memcached's 22, are in `keys`)
  AdminArgs admin;               // kLruCrawler, kSlabs, kCacheMemlimit, kWatch

  MetaFlags meta;           // mg/ms/md/ma/me
  BinaryFrame binary;       // binary-protocol requests
  std::string decoded_key;  // storage for a base64-decoded meta key

  // Resets to a default command, keeping vector capacity (the parser reuses one Command).
  void clear();
};

}  // namespace pmcached::protocol

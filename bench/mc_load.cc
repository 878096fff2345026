// mc_load: a load generator shaped like mc-benchmark (seed 002 §5.5), written for pmcached: a
// series of SETs, then a series of GETs, of uniformly random keys "mykey_rand%012d" drawn from a
// key space, over many connections (default 50) that each keep one request in flight. Prints, per
// phase, the requests, the elapsed time, ops/s and the p50/p99/p99.9 latency of a request (send
// to complete reply), one line each, and appends them to a CSV if asked. A measuring program:
//   mc_load --port P [--host H] [--connections 50] [--requests 100000] [--keyspace 100000]
//           [--value-size 100] [--threads 2] [--label NAME] [--csv FILE]
//           [--phases set,get] [--distribution uniform|zipf] [--zipf-theta 0.99] [--hits]
//           [--fill-on-miss] [--pipeline N] [--protocol text|meta|binary]
// Phases (--phases, run in the order given): `set` and `get` are --requests SETs or GETs of
// keys drawn from the distribution; `load` SETs every key of the key space once, in order (so
// `--phases load,get` loads a data set and then reads it). `zipf` ranks are scattered over the
// key space (bench/page_stream.h). With --hits each line ends with what the replies were: GET
// "hit ratio R (hits H, misses M, errors E)" (a reply END with no VALUE is a miss), SET and LOAD
// "stored S, errors E"; the CSV gains two columns (hits or stored, errors). --fill-on-miss
// answers a GET miss with a SET of that key on the same connection, as a cache-aside client does
// (the SET is not timed and not counted). --pipeline N sends N requests at a time on each
// connection in one write, and the next N once all N replies are in, as a pipelining client
// does (memtier's --pipeline); a request's latency runs from that write to its own reply.
// --protocol picks the requests: text `set`/`get` (the default), meta `ms <key> <bytes>` and
// `mg <key> v`, or binary SET and GET frames (flags 0, no expiry, as the text ones).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/mc_reply.h"
#include "bench/page_stream.h"

namespace {

using Clock = std::chrono::steady_clock;
using pmcached::bench::Reply;
using pmcached::bench::ReplyKind;

enum class PhaseKind { kLoad, kSet, kGet };
enum class Distribution { kUniform, kZipf };
enum class Protocol { kText, kMeta, kBinary };

const char* phase_name(PhaseKind p) {
  switch (p) {
    case PhaseKind::kLoad: return "LOAD";
    case PhaseKind::kSet: return "SET";
    case PhaseKind::kGet: return "GET";
  }
  return "?";
}

struct Config {
  std::string host = "127.0.0.1";
  int port = 11211;
  int connections = 50;
  std::size_t requests = 100000;
  std::size_t keyspace = 100000;
  std::size_t value_size = 100;
  int threads = 2;
  Distribution distribution = Distribution::kUniform;
  double zipf_theta = 0.99;
  bool fill_on_miss = false;
  std::size_t pipeline = 1;  // requests sent together on a connection
  Protocol protocol = Protocol::kText;
};

// A binary request frame (magic 0x80): `extras`, `key` and `value` after the 24-byte header.
std::string binary_frame(std::uint8_t opcode, std::string_view extras, std::string_view key,
                         std::string_view value) {
  std::string frame(24, '\0');
  const std::size_t body = extras.size() + key.size() + value.size();
  frame[0] = static_cast<char>(0x80);
  frame[1] = static_cast<char>(opcode);
  frame[2] = static_cast<char>(key.size() >> 8);
  frame[3] = static_cast<char>(key.size());
  frame[4] = static_cast<char>(extras.size());
  for (int i = 0; i < 4; ++i) frame[8 + i] = static_cast<char>(body >> (8 * (3 - i)));
  frame.append(extras).append(key).append(value);
  return frame;
}

// The SET or GET of `key` in `protocol`.
std::string set_request(Protocol protocol, std::string_view key, const std::string& value) {
  const std::string size = std::to_string(value.size());
  switch (protocol) {
    case Protocol::kText:
      return "set " + std::string(key) + " 0 0 " + size + "\r\n" + value + "\r\n";
    case Protocol::kMeta: return "ms " + std::string(key) + " " + size + "\r\n" + value + "\r\n";
    case Protocol::kBinary: return binary_frame(0x01, std::string(8, '\0'), key, value);
  }
  return {};
}

std::string get_request(Protocol protocol, std::string_view key) {
  switch (protocol) {
    case Protocol::kText: return "get " + std::string(key) + "\r\n";
    case Protocol::kMeta: return "mg " + std::string(key) + " v\r\n";
    case Protocol::kBinary: return binary_frame(0x00, {}, key, {});
  }
  return {};
}

// The first reply in `in`, to a storage request or (`get`) to a one-key get.
Reply parse_reply(Protocol protocol, bool get, std::string_view in) {
  switch (protocol) {
    case Protocol::kText:
      return get ? pmcached::bench::parse_get_reply(in) : pmcached::bench::parse_storage_reply(in);
    case Protocol::kMeta:
      return get ? pmcached::bench::parse_meta_get_reply(in)
                 : pmcached::bench::parse_meta_storage_reply(in);
    case Protocol::kBinary: return pmcached::bench::parse_binary_reply(in, get);
  }
  return {};
}

// What one phase asks of the threads: its kind, how many requests, and (zipf) the keys in order.
struct PhasePlan {
  PhaseKind kind = PhaseKind::kSet;
  std::size_t requests = 0;
  std::vector<std::uint32_t> zipf_keys;  // key + 1 of request i; empty unless zipf
};

struct Connection {
  int fd = -1;
  std::string in;
  Clock::time_point sent;
  std::size_t key = 0;        // of the last request sent
  std::size_t in_flight = 0;  // requests whose replies have not come
  bool busy = false;
  bool filling = false;  // the reply awaited is that of a --fill-on-miss SET
};

// What one thread saw: latencies and how the replies went.
struct Tally {
  std::vector<std::uint32_t> latencies_us;
  std::size_t ok = 0;  // GET hits, or STORED replies
  std::size_t errors = 0;
  std::size_t fill_errors = 0;  // --fill-on-miss SETs not STORED (not among the requests)
  std::string first_error;
};

int connect_to(const Config& c) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(c.port));
  inet_pton(AF_INET, c.host.c_str(), &addr.sin_addr);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::perror("connect");
    std::exit(1);
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

void send_all(int fd, const std::string& request) {
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    std::perror("send");
    std::exit(1);
  }
}

// One thread: its connections, each with one request in flight, until `issued` reaches the total.
void drive(const Config& c, const PhasePlan& plan, std::atomic<std::size_t>& issued, unsigned seed,
           Tally& tally) {
  const bool get = plan.kind == PhaseKind::kGet;
  std::vector<Connection> conns(static_cast<std::size_t>(c.connections / c.threads));
  for (Connection& conn : conns) conn.fd = connect_to(c);
  std::mt19937 rng(seed);
  const std::string value(c.value_size, 'x');
  char key[32];
  std::vector<pollfd> fds(conns.size());
  auto set_of = [&](std::size_t k) {
    std::snprintf(key, sizeof key, "mykey_rand%012zu", k);
    return set_request(c.protocol, key, value);
  };
  auto get_of = [&](std::size_t k) {
    std::snprintf(key, sizeof key, "mykey_rand%012zu", k);
    return get_request(c.protocol, key);
  };
  std::string request;
  auto send_next = [&](Connection& conn) {
    request.clear();
    conn.in_flight = 0;
    while (conn.in_flight < c.pipeline) {
      const std::size_t i = issued.fetch_add(1);
      if (i >= plan.requests) break;
      if (plan.kind == PhaseKind::kLoad) {
        conn.key = i;
      } else if (!plan.zipf_keys.empty()) {
        conn.key = plan.zipf_keys[i] - 1;
      } else {
        conn.key = static_cast<std::size_t>(rng() % c.keyspace);
      }
      request += get ? get_of(conn.key) : set_of(conn.key);
      ++conn.in_flight;
    }
    if (conn.in_flight == 0) return;
    conn.sent = Clock::now();
    send_all(conn.fd, request);
    conn.busy = true;
  };
  auto note_error = [&](const Reply& r, std::size_t& count) {
    ++count;
    if (tally.first_error.empty()) tally.first_error = r.error;
  };
  for (Connection& conn : conns) send_next(conn);
  char buffer[65536];
  for (;;) {
    std::size_t waiting = 0;
    for (std::size_t i = 0; i < conns.size(); ++i) {
      fds[i] = {conns[i].fd, static_cast<short>(conns[i].busy ? POLLIN : 0), 0};
      waiting += conns[i].busy;
    }
    if (waiting == 0) break;
    if (poll(fds.data(), fds.size(), 10000) <= 0) {
      std::fprintf(stderr, "mc_load: no reply within 10 s\n");
      std::exit(1);
    }
    for (std::size_t i = 0; i < conns.size(); ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      Connection& conn = conns[i];
      const ssize_t got = recv(conn.fd, buffer, sizeof buffer, 0);
      if (got <= 0) {
        std::fprintf(stderr, "mc_load: the server closed a connection\n");
        std::exit(1);
      }
      conn.in.append(buffer, static_cast<std::size_t>(got));
      const bool storage_reply = !get || conn.filling;
      // The replies in, one by one: all of them before the next request goes out.
      const auto arrived = Clock::now();
      Reply r{};
      std::size_t used = 0;
      for (;;) {
        const std::string_view rest = std::string_view(conn.in).substr(used);
        r = parse_reply(c.protocol, !storage_reply, rest);
        if (r.kind == ReplyKind::kIncomplete || r.kind == ReplyKind::kMalformed) break;
        used += r.length;
        if (conn.in_flight == 1) break;  // the last reply: handled below
        --conn.in_flight;
        tally.latencies_us.push_back(static_cast<std::uint32_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(arrived - conn.sent).count()));
        if (r.kind == ReplyKind::kStored || r.kind == ReplyKind::kHit) {
          ++tally.ok;
        } else if (r.kind == ReplyKind::kError) {
          note_error(r, tally.errors);
        }
      }
      if (r.kind == ReplyKind::kIncomplete) {
        conn.in.erase(0, used);
        continue;
      }
      if (r.kind == ReplyKind::kMalformed || used != conn.in.size()) {
        std::fprintf(stderr, "mc_load: unexpected reply: %.200s\n", conn.in.c_str());
        std::exit(1);
      }
      if (conn.filling) {  // the untimed SET after a miss
        if (r.kind != ReplyKind::kStored) note_error(r, tally.fill_errors);
        conn.filling = false;
        conn.in.clear();
        conn.busy = false;
        send_next(conn);
        continue;
      }
      tally.latencies_us.push_back(static_cast<std::uint32_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - conn.sent).count()));
      if (r.kind == ReplyKind::kStored || r.kind == ReplyKind::kHit) {
        ++tally.ok;
      } else if (r.kind == ReplyKind::kError) {
        note_error(r, tally.errors);
      }
      conn.in.clear();
      conn.busy = false;
      if (r.kind == ReplyKind::kMiss && c.fill_on_miss) {
        send_all(conn.fd, set_of(conn.key));
        conn.filling = true;
        conn.busy = true;
        continue;
      }
      send_next(conn);
    }
  }
  for (Connection& conn : conns) close(conn.fd);
}

struct PhaseResult {
  double seconds = 0;
  std::vector<std::uint32_t> latencies_us;
  std::size_t ok = 0;
  std::size_t errors = 0;
  std::size_t fill_errors = 0;
  std::string first_error;
};

PhaseResult run_phase(const Config& c, const PhasePlan& plan) {
  std::atomic<std::size_t> issued{0};
  std::vector<Tally> per_thread(static_cast<std::size_t>(c.threads));
  const auto started = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < c.threads; ++t) {
    threads.emplace_back(drive, std::cref(c), std::cref(plan), std::ref(issued),
                         17u + static_cast<unsigned>(t),
                         std::ref(per_thread[static_cast<std::size_t>(t)]));
  }
  for (std::thread& t : threads) t.join();
  PhaseResult p;
  p.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  for (Tally& t : per_thread) {
    p.latencies_us.insert(p.latencies_us.end(), t.latencies_us.begin(), t.latencies_us.end());
    p.ok += t.ok;
    p.errors += t.errors;
    p.fill_errors += t.fill_errors;
    if (p.first_error.empty()) p.first_error = t.first_error;
  }
  std::sort(p.latencies_us.begin(), p.latencies_us.end());
  return p;
}

std::uint32_t percentile(const std::vector<std::uint32_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1, static_cast<std::size_t>(q * sorted.size()))];
}

PhasePlan plan_phase(const Config& c, PhaseKind kind, std::size_t index) {
  PhasePlan plan;
  plan.kind = kind;
  plan.requests = kind == PhaseKind::kLoad ? c.keyspace : c.requests;
  if (kind != PhaseKind::kLoad && c.distribution == Distribution::kZipf) {
    // A different stream per phase, so that the GETs do not retrace the SETs' keys.
    plan.zipf_keys = pmcached::bench::make_page_stream(pmcached::bench::PageSkew::kZipf,
                                                       static_cast<std::uint32_t>(c.keyspace),
                                                       plan.requests, c.zipf_theta, 17 + index);
  }
  return plan;
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  std::string label = "server", csv;
  bool hits = false;
  CLI::App app{"mc_load: mc-benchmark-shaped SET then GET load (seed 002 §5.5)"};
  app.add_option("--host", c.host, "server address");
  app.add_option("--port", c.port, "server port")->required();
  app.add_option("--connections", c.connections, "concurrent connections")
      ->check(CLI::Range(1, 10000));
  app.add_option("--requests", c.requests, "requests per set or get phase")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 32));
  app.add_option("--keyspace", c.keyspace, "keys are mykey_rand%012d of [0, keyspace)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 40));
  app.add_option("--value-size", c.value_size, "SET value bytes")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
  app.add_option("--threads", c.threads, "client threads")->check(CLI::Range(1, 64));
  app.add_option("--label", label, "name of the server in the output");
  app.add_option("--csv", csv, "append every phase to this CSV file");
  std::vector<std::string> phase_list{"set", "get"};
  std::string distribution = "uniform";
  app.add_option("--phases", phase_list,
                 "phases in order, comma-separated: load (every key once), set, get")
      ->delimiter(',')
      ->check(CLI::IsMember({"load", "set", "get"}))
      ->capture_default_str();
  app.add_option("--distribution", distribution, "keys of set and get phases")
      ->check(CLI::IsMember({"uniform", "zipf"}))
      ->capture_default_str();
  app.add_option("--zipf-theta", c.zipf_theta, "skew of zipf; default 0.99 (YCSB)")
      ->check(CLI::Range(0.01, 0.999));
  app.add_flag("--hits", hits, "end each line with hits / stores and errors (and the CSV)");
  app.add_flag("--fill-on-miss", c.fill_on_miss, "SET a key after its GET missed (untimed)");
  app.add_option("--pipeline", c.pipeline, "requests sent at once on each connection")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1000}));
  std::string protocol = "text";
  app.add_option("--protocol", protocol, "requests: text set/get, meta ms/mg, binary SET/GET")
      ->check(CLI::IsMember({"text", "meta", "binary"}))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  std::vector<PhaseKind> phases;
  for (const std::string& p : phase_list) {
    phases.push_back(p == "load"  ? PhaseKind::kLoad
                     : p == "set" ? PhaseKind::kSet
                                  : PhaseKind::kGet);
  }
  if (distribution == "zipf") c.distribution = Distribution::kZipf;
  if (protocol == "meta") c.protocol = Protocol::kMeta;
  if (protocol == "binary") c.protocol = Protocol::kBinary;
  if (c.fill_on_miss && c.pipeline > 1) {
    std::fprintf(stderr, "mc_load: --fill-on-miss takes no --pipeline\n");
    return 2;
  }
  if (c.distribution == Distribution::kZipf && c.keyspace > UINT32_MAX) {
    std::fprintf(stderr, "mc_load: zipf needs --keyspace below 2^32\n");
    return 2;
  }
  c.connections = std::max(c.connections, c.threads);
  for (std::size_t i = 0; i < phases.size(); ++i) {
    const PhasePlan plan = plan_phase(c, phases[i], i);
    const PhaseResult p = run_phase(c, plan);
    const bool get = plan.kind == PhaseKind::kGet;
    const double ops = static_cast<double>(p.latencies_us.size()) / p.seconds;
    const std::uint32_t p50 = percentile(p.latencies_us, 0.5);
    const std::uint32_t p99 = percentile(p.latencies_us, 0.99);
    const std::uint32_t p999 = percentile(p.latencies_us, 0.999);
    const std::size_t n = p.latencies_us.size();
    std::printf(
        "%-10s %-3s requests %zu in %.2f s: %.0f ops/s, p50 %u us, p99 %u us, "
        "p99.9 %u us",
        label.c_str(), phase_name(plan.kind), n, p.seconds, ops, p50, p99, p999);
    if (hits && get) {
      std::printf(", hit ratio %.4f (hits %zu, misses %zu, errors %zu)",
                  n == 0 ? 0.0 : static_cast<double>(p.ok) / static_cast<double>(n), p.ok,
                  n - p.ok - p.errors, p.errors);
    } else if (hits) {
      std::printf(", stored %zu, errors %zu", p.ok, p.errors);
    }
    std::printf("\n");
    std::fflush(stdout);  // a caller may sample the server's CPU time at each phase's end
    if (p.errors + p.fill_errors != 0) {
      std::fprintf(stderr, "mc_load: %s: %zu error replies", phase_name(plan.kind),
                   p.errors + p.fill_errors);
      if (c.fill_on_miss) std::fprintf(stderr, " (%zu to SETs after a miss)", p.fill_errors);
      std::fprintf(stderr, ", the first: %s\n", p.first_error.c_str());
    }
    if (!csv.empty()) {
      std::FILE* out = std::fopen(csv.c_str(), "a");
      if (out == nullptr) return 2;
      std::fprintf(out, "%s,%s,%zu,%.3f,%.0f,%u,%u,%u", label.c_str(), phase_name(plan.kind), n,
                   p.seconds, ops, p50, p99, p999);
      if (hits) std::fprintf(out, ",%zu,%zu", p.ok, p.errors);
      std::fprintf(out, "\n");
      std::fclose(out);
    }
  }
  return 0;
}

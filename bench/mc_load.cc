// mc_load: a load generator shaped like mc-benchmark (seed 002 §5.5), written for pmcached: a
// series of SETs, then a series of GETs, of uniformly random keys "mykey_rand%012d" drawn from a
// key space, over many connections (default 50) that each keep one request in flight. Prints, per
// phase, the requests, the elapsed time, ops/s and the p50/p99/p99.9 latency of a request (send
// to complete reply), one line each, and appends them to a CSV if asked. A measuring program:
//   mc_load --port P [--host H] [--connections 50] [--requests 100000] [--keyspace 100000]
//           [--value-size 100] [--threads 2] [--label NAME] [--csv FILE]
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

namespace {

using Clock = std::chrono::steady_clock;

struct Config {
  std::string host = "127.0.0.1";
  int port = 11211;
  int connections = 50;
  std::size_t requests = 100000;
  std::size_t keyspace = 100000;
  std::size_t value_size = 100;
  int threads = 2;
};

struct Connection {
  int fd = -1;
  std::string in;
  Clock::time_point sent;
  bool busy = false;
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

// A reply is complete when it ends a SET ("STORED\r\n") or a GET ("END\r\n"); values are 'x's.
bool complete(const std::string& in, bool get) {
  const char* tail = get ? "END\r\n" : "STORED\r\n";
  const std::size_t n = std::strlen(tail);
  return in.size() >= n && in.compare(in.size() - n, n, tail) == 0;
}

// One thread: its connections, each with one request in flight, until `issued` reaches the total.
void drive(const Config& c, bool get, std::atomic<std::size_t>& issued, unsigned seed,
           std::vector<std::uint32_t>& latencies_us) {
  std::vector<Connection> conns(static_cast<std::size_t>(c.connections / c.threads));
  for (Connection& conn : conns) conn.fd = connect_to(c);
  std::mt19937 rng(seed);
  const std::string value(c.value_size, 'x');
  char key[32];
  std::vector<pollfd> fds(conns.size());
  auto send_next = [&](Connection& conn) {
    if (issued.fetch_add(1) >= c.requests) return;
    std::snprintf(key, sizeof key, "mykey_rand%012zu",
                  static_cast<std::size_t>(rng() % c.keyspace));
    std::string request = get ? "get " + std::string(key) + "\r\n"
                              : "set " + std::string(key) + " 0 0 " + std::to_string(c.value_size) +
                                    "\r\n" + value + "\r\n";
    conn.sent = Clock::now();
    if (send(conn.fd, request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size())) {
      std::perror("send");
      std::exit(1);
    }
    conn.busy = true;
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
      if (!complete(conn.in, get)) continue;
      latencies_us.push_back(static_cast<std::uint32_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - conn.sent).count()));
      conn.in.clear();
      conn.busy = false;
      send_next(conn);
    }
  }
  for (Connection& conn : conns) close(conn.fd);
}

struct Phase {
  double seconds = 0;
  std::vector<std::uint32_t> latencies_us;
};

Phase run_phase(const Config& c, bool get) {
  std::atomic<std::size_t> issued{0};
  std::vector<std::vector<std::uint32_t>> per_thread(static_cast<std::size_t>(c.threads));
  const auto started = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < c.threads; ++t) {
    threads.emplace_back(drive, std::cref(c), get, std::ref(issued), 17u + static_cast<unsigned>(t),
                         std::ref(per_thread[static_cast<std::size_t>(t)]));
  }
  for (std::thread& t : threads) t.join();
  Phase p;
  p.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  for (auto& v : per_thread) p.latencies_us.insert(p.latencies_us.end(), v.begin(), v.end());
  std::sort(p.latencies_us.begin(), p.latencies_us.end());
  return p;
}

std::uint32_t percentile(const std::vector<std::uint32_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1, static_cast<std::size_t>(q * sorted.size()))];
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  std::string label = "server", csv;
  CLI::App app{"mc_load: mc-benchmark-shaped SET then GET load (seed 002 §5.5)"};
  app.add_option("--host", c.host, "server address");
  app.add_option("--port", c.port, "server port")->required();
  app.add_option("--connections", c.connections, "concurrent connections")
      ->check(CLI::Range(1, 10000));
  app.add_option("--requests", c.requests, "requests per phase")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 32));
  app.add_option("--keyspace", c.keyspace, "keys are mykey_rand%012d of [0, keyspace)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 40));
  app.add_option("--value-size", c.value_size, "SET value bytes")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
  app.add_option("--threads", c.threads, "client threads")->check(CLI::Range(1, 64));
  app.add_option("--label", label, "name of the server in the output");
  app.add_option("--csv", csv, "append the two phases to this CSV file");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  c.connections = std::max(c.connections, c.threads);
  for (bool get : {false, true}) {
    const Phase p = run_phase(c, get);
    const double ops = static_cast<double>(p.latencies_us.size()) / p.seconds;
    const std::uint32_t p50 = percentile(p.latencies_us, 0.5);
    const std::uint32_t p99 = percentile(p.latencies_us, 0.99);
    const std::uint32_t p999 = percentile(p.latencies_us, 0.999);
    std::printf(
        "%-10s %-3s requests %zu in %.2f s: %.0f ops/s, p50 %u us, p99 %u us, "
        "p99.9 %u us\n",
        label.c_str(), get ? "GET" : "SET", p.latencies_us.size(), p.seconds, ops, p50, p99, p999);
    std::fflush(stdout);  // a caller may sample the server's CPU time at each phase's end
    if (!csv.empty()) {
      std::FILE* out = std::fopen(csv.c_str(), "a");
      if (out == nullptr) return 2;
      std::fprintf(out, "%s,%s,%zu,%.3f,%.0f,%u,%u,%u\n", label.c_str(), get ? "GET" : "SET",
                   p.latencies_us.size(), p.seconds, ops, p50, p99, p999);
      std::fclose(out);
    }
  }
  return 0;
}

#!/usr/bin/env bash
# A MEASUREMENT, not a test: how long a paged engine (bptree) takes to come back after a crash.
#
#   scripts/measure-paged-recovery.sh [--items N] [--engine NAME] [--buffer-pool-mb MB]
#                                     [--page-table hash|swizzle] [--eviction POLICY]
#                                     [--log-mb MB] [--page-size BYTES] [--dir DIR]
#                                     [--pmcached-bin PATH] [--keep]
#
#   --items N            items to load (default 1000000): 16-byte keys, 100-byte values
#   --engine NAME        a paged engine (default bptree)
#   --buffer-pool-mb MB  the DRAM buffer pool (default 16: about a tenth of 1M items' pages)
#   --page-table, --eviction, --log-mb, --page-size: passed on (defaults: the server's)
#   --dir DIR            where the pool and page file go (default a new directory under ${TMPDIR:-/tmp})
#   --pmcached-bin PATH  the pmcached to measure (default build/server/pmcached)
#   --keep               keep the pool and page file afterwards
#
# Like scripts/measure-recovery.sh, for a pool (the redo log) plus a page file (the items):
# starts pmcached on new files, loads the items with a pipelined loader (batches of 1000 sets,
# every reply read), then (a) SIGKILLs it and restarts: the log since the last checkpoint is
# replayed; (b) stops that one with SIGTERM (a checkpoint) and restarts: nothing to replay. For
# each start it prints the wall time from exec to the first `version` reply, the server's STAT
# recovery_time_us (replay plus the store's scan of every record), the engine's replay and
# buffer counters, and checks items_recovered and a sample of values.
set -euo pipefail
script="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/.."
root="$(pwd)"

usage() { sed -n '4,16s/^# \{0,1\}//p' "$script" >&2; exit "${1:-2}"; }

items=1000000
engine="bptree"
flags=(--buffer-pool-mb 16)
dir=""
keep=0
pmcached_bin="$root/build/server/pmcached"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --items) items="${2:?}"; shift 2 ;;
    --engine) engine="${2:?}"; shift 2 ;;
    --buffer-pool-mb|--page-table|--eviction|--log-mb|--page-size)
      flags+=("$1" "${2:?}"); shift 2 ;;
    --dir) dir="${2:?}"; shift 2 ;;
    --pmcached-bin) pmcached_bin="$(realpath "${2:?}")"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) usage 0 ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
done

[[ -x "$pmcached_bin" ]] || { echo "no pmcached at $pmcached_bin (build it, or --pmcached-bin)" >&2
                               exit 1; }
if [[ -z "$dir" ]]; then
  dir="$(mktemp -d "${TMPDIR:-/tmp}/pmcached-paged-recovery.XXXXXX")"
  [[ $keep == 1 ]] || trap 'rm -rf "$dir"' EXIT
else
  mkdir -p "$dir"
  [[ $keep == 1 ]] || trap 'rm -f "$dir/recovery.pool" "$dir/recovery.pool.pages"' EXIT
fi
pool="$dir/recovery.pool"
rm -f "$pool" "$pool.pages"

/usr/bin/python3 - "$pmcached_bin" "$engine" "$pool" "$items" "$dir" "${flags[@]}" <<'PYTHON'
import atexit, os, re, signal, socket, subprocess, sys, time

binary, engine, pool, items, logdir = sys.argv[1:6]
flags = sys.argv[6:]
items = int(items)
HOST = "127.0.0.1"
STARTED = []
atexit.register(lambda: [p.kill() for p in STARTED if p.poll() is None])


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def key(i):
    return b"key:%012d" % i                               # 16 bytes


def value(i):
    return (b"%016d" % i) * 6 + b"%04d" % (i % 10000)     # 100 bytes


class Server:
    def __init__(self, label):
        self.port = free_port()
        self.log_path = os.path.join(logdir, f"server-{label}.log")
        argv = [binary, "--engine", engine, "--pool", pool, *flags,
                "-p", str(self.port), "-l", HOST]
        log = open(self.log_path, "wb")
        self.t_exec = time.monotonic()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        STARTED.append(self.proc)
        self.ready_s = self._await_version()

    def _await_version(self, deadline_s=600):
        while time.monotonic() - self.t_exec < deadline_s:
            if self.proc.poll() is not None:
                sys.exit(f"pmcached exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with socket.create_connection((HOST, self.port), timeout=5) as s:
                    s.sendall(b"version\r\n")
                    if s.recv(100).startswith(b"VERSION "):
                        return time.monotonic() - self.t_exec
            except OSError:
                time.sleep(0.001)
        sys.exit(f"pmcached not answering `version` after {deadline_s}s:\n{self.log()}")

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def connect(self):
        s = socket.create_connection((HOST, self.port), timeout=60)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s


def recv_exact(s, n):
    chunks, got = [], 0
    while got < n:
        chunk = s.recv(min(n - got, 1 << 20))
        if not chunk:
            sys.exit("connection closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def recv_until(s, end):
    data = b""
    while not data.endswith(end):
        chunk = s.recv(1 << 20)
        if not chunk:
            sys.exit("connection closed")
        data += chunk
    return data


def stats(s, group=b""):
    s.sendall(b"stats" + (b" " + group if group else b"") + b"\r\n")
    reply = recv_until(s, b"END\r\n").decode()
    return dict(re.findall(r"STAT (\S+) (\S+)", reply))


def engine_figures(s):
    st = stats(s, b"engine")
    names = ("log_units_replayed", "checkpoints", "log_used_bytes", "buffer_frames",
             "buffer_misses", "buffer_evictions", "page_file_pages", "page_file_reads",
             "page_file_direct_io", "tree_height")
    return "; ".join(f"{n} {st[n]}" for n in names if n in st)


def load(s):
    batch = 1000
    stored = b"STORED\r\n"
    started = time.monotonic()
    for first in range(0, items, batch):
        n = min(batch, items - first)
        s.sendall(b"".join(b"set %s 0 0 100\r\n%s\r\n" % (key(i), value(i))
                           for i in range(first, first + n)))
        reply = recv_exact(s, len(stored) * n)
        if reply != stored * n:
            sys.exit(f"load failed at item {first}: {reply[:200]!r}")
    return time.monotonic() - started


def check(server, label):
    with server.connect() as s:
        st = stats(s)
        figures = engine_figures(s)
        step = max(1, items // 1000)
        sample = list(range(0, items, step))
        bad = 0
        for i in range(0, len(sample), 100):
            keys = sample[i:i + 100]
            s.sendall(b"get " + b" ".join(key(k) for k in keys) + b"\r\n")
            reply = recv_until(s, b"END\r\n")
            bad += sum(1 for k in keys
                       if b"VALUE %s 0 100\r\n%s\r\n" % (key(k), value(k)) not in reply)
    recovered = int(st.get("items_recovered", -1))
    print(f"{label:>8}: exec -> first `version` reply {server.ready_s * 1000:9.1f} ms; "
          f"recovery_time_us {int(st.get('recovery_time_us', -1)):>10}; "
          f"items_recovered {recovered}, dropped {st.get('items_dropped')}; "
          f"{len(sample) - bad}/{len(sample)} sampled values intact\n"
          f"          engine: {figures}")
    if recovered != items or bad:
        print(f"          PROBLEM: expected {items} items, all sampled values intact")
    return recovered == items and bad == 0


print(f"pmcached {binary}, engine {engine}, pool {pool} + {pool}.pages, flags {' '.join(flags)}; "
      f"{items} items (16-byte keys, 100-byte values)")
server = Server("new")
print(f"     new: exec -> first `version` reply {server.ready_s * 1000:9.1f} ms (new files)")
with server.connect() as s:
    seconds = load(s)
    st = stats(s)
    figures = engine_figures(s)
print(f"  loaded: {items} sets in {seconds:.1f} s ({items / seconds:,.0f}/s); "
      f"curr_items {st.get('curr_items')}, evictions {st.get('evictions')}\n"
      f"          engine: {figures}; page file {os.path.getsize(pool + '.pages') >> 20} MB")

ok = True
server.proc.send_signal(signal.SIGKILL)
server.proc.wait(timeout=60)
server = Server("sigkill")
ok &= check(server, "sigkill")

server.proc.send_signal(signal.SIGTERM)
status = server.proc.wait(timeout=600)
if status != 0:
    print(f"          PROBLEM: SIGTERM exit status {status}")
    ok = False
server = Server("sigterm")
ok &= check(server, "sigterm")
server.proc.send_signal(signal.SIGTERM)
server.proc.wait(timeout=600)
sys.exit(0 if ok else 1)
PYTHON

#!/usr/bin/env python3
"""The client half of scripts/measure-recovery.sh and scripts/measure-paged-recovery.sh (a
MEASUREMENT, not a test): starts pmcached on new files, loads N items with a pipelined loader
(batches of 1000 sets, every reply read), restarts it after SIGKILL and after SIGTERM (in the order
--restarts gives), and for each start prints the wall time from exec to the first `version` reply,
the server's STAT recovery_time_us and the engine's own figures, and checks items_recovered and a
sample of values. Exit status 1 if an item is missing or a value damaged.

  measure_recovery.py --binary B --engine E --pool P --items N --logdir D
                      [--restarts sigterm,sigkill] [--figures a,b,...] [--paged] -- SERVER_FLAGS...
"""
import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import time

import loopback_server

HOST = "127.0.0.1"


def key(i):
    return b"key:%012d" % i                               # 16 bytes


def value(i):
    return (b"%016d" % i) * 6 + b"%04d" % (i % 10000)     # 100 bytes


class Server:
    def __init__(self, args, label):
        self.port = loopback_server.free_port()
        self.log_path = os.path.join(args.logdir, f"server-{label}.log")
        argv = [args.binary, "--engine", args.engine, "--pool", args.pool, *args.server_flags,
                "-p", str(self.port), "-l", HOST]
        log = open(self.log_path, "wb")
        self.t_exec = time.monotonic()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        loopback_server.kill_at_exit(self.proc)
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


def engine_figures(args, s):
    """The engine's own figures named by --figures, where it has them."""
    st = stats(s, b"engine")
    shown = "; ".join(f"{n} {st[n]}" for n in args.figures if n in st)
    return f"\n          engine: {shown}" if shown else ""


def load(args, s):
    batch = 1000
    stored = b"STORED\r\n"
    started = time.monotonic()
    for first in range(0, args.items, batch):
        n = min(batch, args.items - first)
        s.sendall(b"".join(b"set %s 0 0 100\r\n%s\r\n" % (key(i), value(i))
                           for i in range(first, first + n)))
        reply = recv_exact(s, len(stored) * n)
        if reply != stored * n:
            sys.exit(f"load failed at item {first}: {reply[:200]!r}")
    return time.monotonic() - started


def check(args, server, label):
    with server.connect() as s:
        st = stats(s)
        figures = engine_figures(args, s)
        step = max(1, args.items // 1000)
        sample = list(range(0, args.items, step))
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
          f"{len(sample) - bad}/{len(sample)} sampled values intact{figures}")
    if recovered != args.items or bad:
        print(f"          PROBLEM: expected {args.items} items, all sampled values intact")
    return recovered == args.items and bad == 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--binary", required=True)
    p.add_argument("--engine", required=True)
    p.add_argument("--pool", required=True)
    p.add_argument("--items", type=int, required=True)
    p.add_argument("--logdir", required=True)
    p.add_argument("--restarts", default="sigterm,sigkill",
                   type=lambda t: t.split(","), help="the restarts, in order")
    p.add_argument("--figures", default="", type=lambda t: [f for f in t.split(",") if f],
                   help="`stats engine` figures to print after the load and each start")
    p.add_argument("--paged", action="store_true", help="the pool has a page file beside it")
    p.add_argument("server_flags", nargs="*")
    args = p.parse_args()

    files = f"{args.pool} + {args.pool}.pages" if args.paged else args.pool
    print(f"pmcached {args.binary}, engine {args.engine}, {files}, flags "
          f"{' '.join(args.server_flags)}; {args.items} items (16-byte keys, 100-byte values)")
    server = Server(args, "new")
    print(f"     new: exec -> first `version` reply {server.ready_s * 1000:9.1f} ms (new files)")
    with server.connect() as s:
        seconds = load(args, s)
        st = stats(s)
        figures = engine_figures(args, s)
    size = (f"; page file {os.path.getsize(args.pool + '.pages') >> 20} MB" if args.paged else "")
    print(f"  loaded: {args.items} sets in {seconds:.1f} s ({args.items / seconds:,.0f}/s); "
          f"curr_items {st.get('curr_items')}, evictions {st.get('evictions')}{figures}{size}")

    ok = True
    for restart in args.restarts:
        if restart == "sigterm":
            server.proc.send_signal(signal.SIGTERM)
            status = server.proc.wait(timeout=600)
            if status != 0:
                print(f"          PROBLEM: SIGTERM exit status {status}")
                ok = False
        else:
            server.proc.send_signal(signal.SIGKILL)
            server.proc.wait(timeout=60)
        server = Server(args, restart)
        ok &= check(args, server, restart)
    server.proc.send_signal(signal.SIGTERM)
    server.proc.wait(timeout=600)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

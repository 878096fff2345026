#!/usr/bin/env python3
"""What a pool costs by its size (a MEASUREMENT, not a test): for each -m, starts pmcached on a new
pool, then restarts it empty, loads N items (pipelined sets, every reply read) and restarts it
again, and prints per step the wall time from exec to the first `version` reply, the server's
resident memory (VmRSS, and its file-backed and shmem parts from /proc) and the disk blocks the
pool file holds. Each restart follows a SIGTERM (a clean shutdown).

  measure_pool_footprint.py --binary build/server/pmcached [--engine wort] [--dir /tmp/x]
                            [--sizes 1024,8192,16384] [--items 100000] [--value-bytes 100]

--dir on a tmpfs (/dev/shm) measures a pool in memory; the default is a directory under /tmp.
"""
import argparse
import atexit
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HOST = "127.0.0.1"
STARTED = []
atexit.register(lambda: [p.kill() for p in STARTED if p.poll() is None])


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def rss_kib(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name in ("VmRSS", "RssFile", "RssShmem"):
                out[name] = int(rest.split()[0])
    return out


class Server:
    def __init__(self, args, pool, size_mb):
        self.port = free_port()
        argv = [args.binary, "--engine", args.engine, "--pool", pool, "-m", str(size_mb),
                "-p", str(self.port), "-l", HOST]
        self.log = tempfile.TemporaryFile()
        started = time.monotonic()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=self.log)
        STARTED.append(self.proc)
        self.sock = self._connect()
        self.ready_s = time.monotonic() - started

    def _connect(self):
        while True:
            if self.proc.poll() is not None:
                self.log.seek(0)
                sys.exit(f"pmcached exited with {self.proc.returncode}:\n"
                         f"{self.log.read().decode(errors='replace')}")
            try:
                s = socket.create_connection((HOST, self.port), timeout=600)
                s.sendall(b"version\r\n")
                if s.recv(100).startswith(b"VERSION "):
                    return s
                s.close()
            except OSError:
                time.sleep(0.005)

    def load(self, items, value_bytes, batch=1000):
        value = b"v" * value_bytes
        for start in range(0, items, batch):
            n = min(batch, items - start)
            self.sock.sendall(b"".join(b"set key:%012d 0 0 %d\r\n%s\r\n" % (i, value_bytes, value)
                                       for i in range(start, start + n)))
            want = b"STORED\r\n" * n
            got = b""
            while len(got) < len(want):
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    sys.exit("connection closed while loading")
                got += chunk
            if got != want:
                sys.exit(f"a set was refused: {got[:200]!r}")

    def curr_items(self):
        self.sock.sendall(b"stats\r\n")
        got = b""
        while not got.endswith(b"END\r\n"):
            got += self.sock.recv(1 << 16)
        return int(got.split(b"STAT curr_items ")[1].split(b"\r\n")[0])

    def stop(self):
        self.sock.close()
        self.proc.send_signal(signal.SIGTERM)
        if self.proc.wait(timeout=600) != 0:
            sys.exit(f"pmcached exited with {self.proc.returncode} on SIGTERM")


def row(label, size_mb, server, pool, seconds=None):
    r = rss_kib(server.proc.pid)
    disk = os.stat(pool).st_blocks * 512
    t = server.ready_s if seconds is None else seconds
    print(f"| {size_mb} | {label} | {t:.2f} | {r['VmRSS'] / 1024:.0f} | {r['RssFile'] / 1024:.0f}"
          f" | {r['RssShmem'] / 1024:.0f} | {disk / 2**20:.0f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--engine", default="wort")
    parser.add_argument("--dir", default=None)
    parser.add_argument("--sizes", default="1024,8192,16384")
    parser.add_argument("--items", type=int, default=100000)
    parser.add_argument("--value-bytes", type=int, default=100)
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="pool-footprint-", dir=args.dir)
    atexit.register(shutil.rmtree, workdir, True)
    fs = subprocess.run(["stat", "-f", "-c", "%T", workdir], capture_output=True, text=True)
    print(f"# {platform.node()}, {os.cpu_count()} CPUs, kernel {platform.release()}; "
          f"{args.binary} --engine {args.engine}; pool dir {workdir} ({fs.stdout.strip()}); "
          f"{args.items} items of {args.value_bytes} B values\n")
    print("| -m MB | step | ready s | VmRSS MB | RssFile MB | RssShmem MB | pool on disk MB |")
    print("|---|---|---|---|---|---|---|")
    for size_mb in (int(s) for s in args.sizes.split(",")):
        pool = os.path.join(workdir, f"pool-{size_mb}")
        server = Server(args, pool, size_mb)
        row("create (empty)", size_mb, server, pool)
        server.stop()
        server = Server(args, pool, size_mb)
        row("restart (empty)", size_mb, server, pool)
        started = time.monotonic()
        server.load(args.items, args.value_bytes)
        row(f"after loading {args.items} items (load s)", size_mb, server, pool,
            time.monotonic() - started)
        server.stop()
        server = Server(args, pool, size_mb)
        row(f"restart ({args.items} items)", size_mb, server, pool)
        if server.curr_items() != args.items:
            sys.exit(f"restart found {server.curr_items()} items, not {args.items}")
        server.stop()
        os.remove(pool)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""How much of the newest data a full cache keeps (issue 15): a measurement, not a test.

  eviction-recency.py --pmcached BUILD/server/pmcached [--engines dram,wort,...]
                      [--memcached /usr/bin/memcached] [--mb 16] [--times 6] [--max-size 50000]

The default engines are every engine the binary registers (`pmcached --list-engines`).

For each server: start it with `-m MB` (a fresh pool for a persistent engine), set random keys
with values of random sizes (100 B .. max-size, seed 15) until `times` x MB were written, then
read back the most recent writes whose sizes add up to half of `-m`. Prints per server the writes,
refused sets, that share readable, evictions and items left. tests/integration/
test_eviction_recency.py asserts the same workload at >= 95%.
"""
import argparse
import hashlib
import os
import random
import socket
import subprocess
import tempfile
import time

from pymemcache.client.base import Client

from pmcached_engines import engine_names


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def key(i):
    # Random order: key order says nothing about age.
    return hashlib.md5(str(i).encode()).hexdigest()[:8] + f"-{i}"


def start(argv, port):
    proc = subprocess.Popen(argv + ["-p", str(port), "-l", "127.0.0.1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            client = Client(("127.0.0.1", port), timeout=30)
            client.version()
            return proc, client
        except OSError:
            time.sleep(0.05)  # polling a deadline-bounded start
    proc.kill()
    raise RuntimeError(f"{argv[0]} did not start")


def measure(argv, mb, times, max_size, seed=15):
    proc, client = start(argv, free_port())
    try:
        rng = random.Random(seed)
        blob = os.urandom(max_size)
        sizes, refused, total = [], 0, 0
        while total < times * (mb << 20):
            size = rng.randint(100, max_size)
            try:
                stored = client.set(key(len(sizes)), blob[:size], noreply=False)
            except Exception:  # SERVER_ERROR out of memory and the like
                stored = False
            refused += not stored
            sizes.append(size)
            total += size
        newest, budget = [], (mb << 20) // 2
        for i in range(len(sizes) - 1, -1, -1):
            if budget < sizes[i]:
                break
            budget -= sizes[i]
            newest.append(i)
        readable = 0
        for start_at in range(0, len(newest), 100):
            batch = newest[start_at:start_at + 100]
            got = client.get_many([key(i) for i in batch])
            readable += sum(1 for i in batch if len(got.get(key(i), b"")) == sizes[i])
        stats = client.stats()
        return dict(writes=len(sizes), refused=refused, newest=len(newest), readable=readable,
                    share=f"{100.0 * readable / len(newest):.1f}%",
                    evictions=stats[b"evictions"], curr_items=stats[b"curr_items"])
    finally:
        client.close()
        proc.terminate()
        proc.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pmcached", required=True)
    parser.add_argument("--engines", help="comma-separated (default: every registered engine)")
    parser.add_argument("--memcached", default="/usr/bin/memcached",
                        help="reference server; empty to skip")
    parser.add_argument("--mb", type=int, default=16)
    parser.add_argument("--times", type=int, default=6)
    parser.add_argument("--max-size", type=int, default=50_000)
    args = parser.parse_args()
    if args.engines is None:
        args.engines = engine_names(args.pmcached)
    servers = []
    if args.memcached:
        argv = [args.memcached, "-U", "0", "-m", str(args.mb)]
        if os.geteuid() == 0:
            argv += ["-u", "root"]
        servers.append(("memcached", argv))
    with tempfile.TemporaryDirectory() as tmp:
        for engine in filter(None, args.engines.split(",")):
            servers.append((engine, [args.pmcached, "--engine", engine, "-m", str(args.mb),
                                     "--pool", os.path.join(tmp, f"{engine}.pool")]))
        for name, argv in servers:
            result = measure(argv, args.mb, args.times, args.max_size)
            print(f"{name:10} -m {args.mb} sizes 100..{args.max_size}: " +
                  " ".join(f"{k}={v}" for k, v in result.items()), flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Recovery from one damaged key (issue 15): a measurement, not a test.

  key-bit-flip.py --pmcached BUILD/server/pmcached [--engines wort,...] [--trials 20] [--keys 10000]
                  [--seed 1]

The default engines are every persistent engine the binary registers (`pmcached --list-engines`).

Per engine and trial: a fresh pool gets `keys` items key%06d (stopped cleanly), one bit inside one
random item's key record is flipped in the pool file, and the server is started twice. A trial is
OK when the first restart reports items_dropped 1 and curr_items keys-1 with every other item
readable (exact value) and the victim gone, and the second restart drops nothing and still has
keys-1 items. tests/integration/test_durability.py asserts the same for a few trials.
"""
import argparse
import os
import random
import signal
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


def value(i):
    return b"value-%d-" % i + b"x" * (i % 50)


class Server:
    def __init__(self, binary, engine, pool, log):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, "--engine", engine, "--pool", pool, "-p", str(self.port), "-m", "64"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.monotonic() + 30
        while True:
            try:
                self.client = Client(("127.0.0.1", self.port), connect_timeout=1, timeout=10)
                self.client.version()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"the server did not start ({engine}, {pool})")
                time.sleep(0.02)

    def stats(self):
        return {k.decode(): v for k, v in self.client.stats().items()}

    def stop(self):
        self.client.close()
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)


def trial(binary, engine, keys, rng, workdir):
    pool = os.path.join(workdir, f"{engine}.pool")
    if os.path.exists(pool):
        os.remove(pool)
    with open(os.path.join(workdir, f"{engine}.log"), "ab") as log:
        server = Server(binary, engine, pool, log)
        for i in range(keys):
            server.client.set(b"key%06d" % i, value(i), noreply=False)
        server.stop()

        data = bytearray(open(pool, "rb").read())
        victim = rng.randrange(keys)
        key = b"key%06d" % victim
        at = data.find(key)
        while at >= 0 and data.find(value(victim), at, at + 80 + len(value(victim))) < 0:
            at = data.find(key, at + 1)
        assert at >= 0, "the victim's record is not in the pool"
        bit = rng.randrange(len(key) * 8)
        data[at + bit // 8] ^= 1 << (bit % 8)
        with open(pool, "wb") as f:
            f.write(data)

        names = [b"key%06d" % i for i in range(keys)]
        results = []
        for _ in range(2):
            server = Server(binary, engine, pool, log)
            s = server.stats()
            got = {}
            for start in range(0, keys, 200):
                got.update(server.client.get_many(names[start:start + 200]))
            server.stop()
            lost = sum(1 for i in range(keys) if i != victim and got.get(names[i]) != value(i))
            results.append((int(s["items_dropped"]), int(s["curr_items"]), lost, key in got))
    (d1, c1, lost1, seen1), (d2, c2, lost2, seen2) = results
    ok = (d1, c1, lost1, seen1, d2, c2, lost2, seen2) == (1, keys - 1, 0, False,
                                                        0, keys - 1, 0, False)
    return ok, f"victim {key.decode()} bit {bit}: restart 1 dropped {d1} items {c1} lost {lost1}" \
               f" victim readable {seen1}; restart 2 dropped {d2} items {c2} lost {lost2}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pmcached", required=True)
    parser.add_argument("--engines", help="comma-separated (default: every persistent engine)")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--keys", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    if args.engines is None:
        args.engines = engine_names(args.pmcached, persistent_only=True)
    with tempfile.TemporaryDirectory(prefix="key-bit-flip.") as workdir:
        for engine in args.engines.split(","):
            rng = random.Random(args.seed)
            passed = 0
            for t in range(args.trials):
                ok, line = trial(args.pmcached, engine, args.keys, rng, workdir)
                passed += ok
                if args.verbose or not ok:
                    print(f"  {engine} trial {t}: {'OK' if ok else 'FAIL'} {line}", flush=True)
            print(f"{engine}: {passed}/{args.trials} trials OK", flush=True)


if __name__ == "__main__":
    main()

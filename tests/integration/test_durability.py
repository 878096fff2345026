"""Durability of the persistent engines, end to end: the real pmcached on a pool file, crashed
with SIGKILL or stopped with SIGTERM, restarted on the same pool.

The contract under test (DESIGN.md, "Keys, items, durability"): a success reply (STORED,
DELETED, TOUCHED, an incr result, meta HD) is sent only after the write is durable, so after a
crash a restart finds every acknowledged change; a change that was in flight is wholly present
or wholly absent. Pool problems at start-up are a one-line error and exit status 2 that leave
the pool file byte-identical; a corrupt item is dropped at recovery, logged and counted.

Note: on emulated PM (a regular file) SIGKILL keeps every store that reached the mapping, so
these tests catch a reply sent before its write was made, not a missing cache-line flush; the
crash simulator's unit tests cover the flushes.

Engines: PMCACHED_PERSISTENT_ENGINES (comma or space separated, default "wort").
Randomised trials print their seed; PMCACHED_DURABILITY_SEED=N repeats a run.
"""

import hashlib
import os
import random
import re
import shlex
import subprocess
import threading
import time

import pytest

from conftest import (HOST, START_DEADLINE_S, STOP_DEADLINE_S, ConnectionClosed, free_port,
                      listens)

ENGINES = os.environ.get("PMCACHED_PERSISTENT_ENGINES", "wort").replace(",", " ").split()
BASE_SEED = int(os.environ.get("PMCACHED_DURABILITY_SEED", random.randrange(1 << 30)))
POOL_MB = 32
ABSENT = None  # the expected state of a key that must not be there

pytestmark = pytest.mark.parametrize("engine", ENGINES)


# --- starting pmcached on a pool --------------------------------------------------------------

@pytest.fixture(scope="session")
def pmcached_argv(server_command):
    """The pmcached command line without --engine/--pool/-m (the tests add their own)."""
    argv = shlex.split(server_command)
    if not os.path.basename(argv[0]).startswith("pmcached"):
        pytest.skip(f"durability tests need pmcached, not {argv[0]}")
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--engine", "--pool", "-m", "--memory-limit"):
            skip = True
        elif not arg.startswith(("--engine=", "--pool=", "--memory-limit=")):
            out.append(arg)
    return out


class PoolFile:
    """A pool path and how to start pmcached on it; every server goes through server_factory,
    so its log is shown when a test fails and it is stopped at teardown."""

    def __init__(self, factory, argv, engine, path, mb=POOL_MB):
        self.factory, self.argv, self.engine, self.path, self.mb = factory, argv, engine, path, mb

    def command(self, engine=None):
        return shlex.join(self.argv + ["--engine", engine or self.engine, "--pool", str(self.path),
                                       "-m", str(self.mb)])

    def start(self, engine=None):
        return self.factory(command=self.command(engine))

    def start_failing(self, engine=None):
        """Runs a server that must refuse the pool; returns (exit status, stderr). Fails the
        test as soon as the server accepts connections instead."""
        port = free_port()
        argv = shlex.split(self.command(engine)) + ["-p", str(port), "-l", HOST]
        with subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE) as proc:
            deadline = time.monotonic() + START_DEADLINE_S
            while proc.poll() is None and time.monotonic() < deadline:
                # Its own listening socket, not just a connection: another test's server may
                # hold the probed port.
                if listens(proc.pid, port):
                    break  # serving: the pool was accepted
                time.sleep(0.01)  # polling interval of a deadline-bounded wait
            if proc.poll() is None:
                proc.kill()
                _, err = proc.communicate(timeout=STOP_DEADLINE_S)
                pytest.fail(f"the server started on a pool it must refuse:\n{err.decode()}")
            return proc.returncode, proc.stderr.read().decode(errors="replace")

    def sha256(self):
        with open(self.path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()


@pytest.fixture
def pool(request, server_factory, pmcached_argv, engine, tmp_path):
    """The test's pool file; deleted afterwards unless the test failed (pools are large)."""
    failed_before = request.session.testsfailed
    pool_file = PoolFile(server_factory, pmcached_argv, engine, tmp_path / f"{engine}.pool")
    yield pool_file
    if request.session.testsfailed == failed_before:
        pool_file.path.unlink(missing_ok=True)


def stop_cleanly(server):
    assert server.stop(), "server did not exit on SIGTERM"
    assert server.proc.returncode == 0, server.log_text()[-3000:]


CLEAN_OPEN = re.compile(r"cleanly closed|closed cleanly", re.IGNORECASE)


def recovered_count(server):
    found = re.findall(r"recovered (\d+) items", server.log_text())
    assert found, "no 'recovered N items' line in the log"
    return int(found[-1])


# --- a small text/meta protocol client over conftest's RawConn ---------------------------------

def store_cmd(key, value, flags=0, exptime=0, verb=b"set"):
    return b"%s %s %d %d %d\r\n%s\r\n" % (verb, key, flags, exptime, len(value), value)


def call(conn, data):
    conn.send(data)
    return conn.read_line()


def read_values(conn):
    """Parses VALUE blocks up to END: {key: (flags, value, cas or None)}. Works on offsets into
    conn.buf (large multi-get replies would make RawConn.read_line quadratic)."""
    deadline = time.monotonic() + conn.timeout
    out, pos = {}, 0
    while True:
        nl = conn.buf.find(b"\r\n", pos)
        if nl < 0:
            conn.fill(deadline)
            continue
        line = conn.buf[pos:nl]
        if line == b"END":
            conn.buf = conn.buf[nl + 2:]
            return out
        parts = line.split()
        assert parts[0] == b"VALUE" and len(parts) in (4, 5), line
        end = nl + 2 + int(parts[3])
        if len(conn.buf) < end + 2:
            conn.fill(deadline)
            continue
        assert conn.buf[end:end + 2] == b"\r\n", conn.buf[end:end + 10]
        out[parts[1]] = (int(parts[2]), conn.buf[nl + 2:end],
                         int(parts[4]) if len(parts) == 5 else None)
        pos = end + 2


def fetch(conn, keys, batch=100):
    """gets for many keys: {key: (flags, value, cas)} for the keys that exist."""
    keys = list(keys)
    out = {}
    for i in range(0, len(keys), batch):
        conn.send(b"gets " + b" ".join(keys[i:i + batch]) + b"\r\n")
        out.update(read_values(conn))
    return out


def stats(conn, group=b""):
    conn.send(b"stats " + group + b"\r\n" if group else b"stats\r\n")
    reply = conn.read_until(b"END\r\n")
    return {parts[1].decode(): parts[2].decode()
            for parts in (line.split(b" ", 2) for line in reply.split(b"\r\n"))
            if len(parts) == 3 and parts[0] == b"STAT"}


def store_batch(conn, items):
    """Pipelined sets: sends all, then reads one STORED per item."""
    conn.send(b"".join(store_cmd(k, v, f) for k, (f, v) in items))
    expected = b"STORED\r\n" * len(items)
    got = conn.read_exact(len(expected), timeout=60)
    assert got == expected, got[:200]


# --- 1. SIGKILL under load ---------------------------------------------------------------------

class Shared:
    """Acknowledged-write counter the killer waits on."""

    def __init__(self, cap):
        self.cond = threading.Condition()
        self.acked = 0
        self.cap = cap
        self.killed = False

    def ack(self):
        with self.cond:
            self.acked += 1
            self.cond.notify_all()
            return self.acked < self.cap


class Model:
    """One writer's own keys and what it has been told about them, across restarts: `acked`
    maps a key to its last acknowledged state ((flags, value) or ABSENT), `cas` holds the cas
    seen by a `gets` of the current version of some keys, `in_flight` is the write that was
    sent but not acknowledged when the server died, if any."""

    def __init__(self, tid, seed, p_delete=0.15, p_replace=0.25, max_replacements=2):
        self.rng = random.Random(seed)
        self.prefix = b"t%d-%d-" % (tid, seed)
        self.p_delete, self.p_replace = p_delete, p_replace
        self.max_replacements = max_replacements
        self.acked, self.cas, self.replaced = {}, {}, {}
        self.present = []  # keys whose acknowledged (or in-flight) state is a value
        self.in_flight = None  # (key, new state)
        self.next_key = 0

    def begin(self, key, state):
        """A write of `key` to `state` is about to be sent. The cas sampled for the key's current
        version is forgotten now, not on the acknowledgement: if the server dies with the write
        in flight and it turns out applied, that cas no longer describes the key."""
        self.in_flight = (key, state)
        self.cas.pop(key, None)

    def resolve_in_flight(self, actual):
        """After a restart: the in-flight write is settled as whatever the server has."""
        key, _ = self.in_flight
        self.in_flight = None
        self.acked[key] = actual
        if actual is ABSENT and key in self.present:
            self.present.remove(key)
        elif actual is not ABSENT and key not in self.present:
            self.present.append(key)


class Writer(threading.Thread):
    """Stores, replaces and deletes its model's keys, one acknowledged write at a time, until
    the server dies (or the shared cap is reached)."""

    def __init__(self, model, address, shared, connect):
        super().__init__(name=f"writer-{model.prefix.decode()}")
        self.m, self.shared = model, shared
        self.conn = connect(address, timeout=30)
        self.error = None

    def random_value(self):
        r = self.m.rng.random()
        n = self.m.rng.randrange(0, 100) if r < 0.7 else \
            self.m.rng.randrange(100, 2000) if r < 0.95 else self.m.rng.randrange(2000, 20000)
        return self.m.rng.randbytes(n)

    def one_write(self):
        m, rng = self.m, self.m.rng
        r = rng.random()
        if r < m.p_delete and m.present:  # delete an acknowledged item
            i = rng.randrange(len(m.present))
            key = m.present[i]
            m.present[i] = m.present[-1]
            m.present.pop()
            meta = rng.random() < 0.3
            m.begin(key, ABSENT)
            reply = call(self.conn, b"md %s\r\n" % key if meta else b"delete %s\r\n" % key)
            assert reply == (b"HD\r\n" if meta else b"DELETED\r\n"), (key, reply)
        else:
            if r < m.p_delete + m.p_replace and m.present:  # replace an acknowledged item
                key = m.present[rng.randrange(len(m.present))]
                if m.replaced.get(key, 0) >= m.max_replacements:
                    return True
                m.replaced[key] = m.replaced.get(key, 0) + 1
            else:
                key = m.prefix + b"%d" % m.next_key
                m.next_key += 1
                m.present.append(key)
            flags, value = rng.getrandbits(32), self.random_value()
            meta = rng.random() < 0.25
            m.begin(key, (flags, value))
            if meta:
                reply = call(self.conn, b"ms %s %d F%d\r\n%s\r\n" % (key, len(value), flags, value))
            else:
                reply = call(self.conn, store_cmd(key, value, flags))
            assert reply == (b"HD\r\n" if meta else b"STORED\r\n"), (key, reply)
        key, state = m.in_flight
        m.acked[key] = state
        m.in_flight = None
        if state is not ABSENT and rng.random() < 0.1:  # sample the cas of this version
            got = fetch(self.conn, [key])[key]
            assert got[:2] == state, key
            m.cas[key] = got[2]
        return self.shared.ack()

    def run(self):
        try:
            while self.one_write():
                pass
        except (ConnectionClosed, OSError, AssertionError) as e:
            if not self.shared.killed:
                self.error = e
        finally:
            with self.shared.cond:
                self.shared.cond.notify_all()


def brief(state):
    return "absent" if state is ABSENT else f"flags {state[0]}, {len(state[1])} bytes " \
        f"{state[1][:12]!r}"


def write_until_killed(server, connect, models, target, cap=20000, writer=None):
    """Runs one writer per model against `server` (a Writer, or the `writer` class given) and
    SIGKILLs it once `target` writes have been acknowledged. Returns the number acknowledged."""
    shared = Shared(cap)
    writers = [(writer or Writer)(m, server.address, shared, connect) for m in models]
    for w in writers:
        w.start()
    with shared.cond:
        reached = shared.cond.wait_for(lambda: shared.acked >= target
                                       or not any(w.is_alive() for w in writers), timeout=120)
        shared.killed = True
    server.kill()
    for w in writers:
        w.join(timeout=60)
    assert not any(w.is_alive() for w in writers), "a writer hung after the kill"
    assert [w.error for w in writers] == [None] * len(writers)
    assert reached and shared.acked >= target, f"{shared.acked} < {target}"
    return shared.acked


def check_models(conn, models):
    """Every model key as acknowledged (value, flags and sampled cas), the in-flight writes wholly
    there or wholly absent (then settled), no key that was never written. Returns (keys present,
    summary)."""
    problems, present, flying_n, applied = [], 0, 0, 0
    for m in models:
        keys = set(m.acked)
        never_written = [m.prefix + b"%d" % (m.next_key + i) for i in range(3)]
        if m.in_flight:
            keys.add(m.in_flight[0])
        got = fetch(conn, sorted(keys) + never_written, batch=50)
        for key in never_written:
            if key in got:
                problems.append((key, "never written but present"))
        flying = m.in_flight[0] if m.in_flight else None
        for key in keys:
            allowed = [m.acked.get(key, ABSENT)]
            if key == flying:
                allowed.append(m.in_flight[1])
            actual = got[key][:2] if key in got else ABSENT
            present += actual is not ABSENT
            if actual not in allowed:
                problems.append((key, "unexpected state", brief(actual),
                                 [brief(a) for a in allowed]))
            elif key in m.cas and key != flying and got[key][2] != m.cas[key]:
                problems.append((key, "cas changed", m.cas[key], got[key][2]))
            if key == flying:
                flying_n += 1
                applied += actual == m.in_flight[1]
                m.resolve_in_flight(actual)
    summary = f"{present} items after restart, {sum(len(m.cas) for m in models)} cas " \
              f"checked, {flying_n} writes in flight of which {applied} applied"
    assert problems == [], f"{summary}; {len(problems)} problems, the first: {problems[:5]}"
    return present, summary


def verify_models(server, conn, models):
    """Checks every model key against the restarted server (check_models), settles the in-flight
    writes, and checks the recovery counters. Returns a one-line summary."""
    present, summary = check_models(conn, models)
    s = stats(conn)
    assert (s["engine"], s["engine_persistent"]) == (server_engine(server), "yes")
    assert int(s["items_recovered"]) == present == recovered_count(server)
    assert int(s["items_dropped"]) == 0
    assert int(s["curr_items"]) == present
    assert int(s["recovery_time_us"]) >= 0
    assert not CLEAN_OPEN.search(server.log_text()), "a killed pool claims a clean close"
    return summary


def server_engine(server):
    return server.argv[server.argv.index("--engine") + 1]


@pytest.mark.parametrize("trial", range(3))
def test_sigkill_under_load_loses_no_acknowledged_write(pool, connect, trial):
    seed = BASE_SEED + trial
    target = random.Random(seed).randrange(200, 15000)
    print(f"seed {seed} (repeat with PMCACHED_DURABILITY_SEED={BASE_SEED})")
    models = [Model(t, seed * 8 + t) for t in range(4)]
    pool.mb = 64  # up to 20k writes of values up to 20 KB: far from eviction
    acked = write_until_killed(pool.start(), connect, models, target)
    server = pool.start()
    summary = verify_models(server, connect(server.address), models)
    print(f"seed {seed}: killed after {acked} acknowledged writes (target {target}); {summary}")


def test_repeated_crashes_on_one_pool(pool, connect):
    """Crash, recover, write more over the same keys (replacing and deleting what earlier runs
    wrote, so recovered space is reused), crash again: a recovery that got the free space
    wrong shows up as a damaged acknowledged item in a later round."""
    seed = BASE_SEED + 100
    print(f"seed {seed} (repeat with PMCACHED_DURABILITY_SEED={BASE_SEED})")
    rng = random.Random(seed)
    models = [Model(t, seed * 8 + t, p_delete=0.2, p_replace=0.5, max_replacements=1 << 30)
              for t in range(4)]
    pool.mb = 64
    server = pool.start()
    for round_no in range(5):
        target = rng.randrange(100, 3000)
        acked = write_until_killed(server, connect, models, target)
        server = pool.start()
        summary = verify_models(server, connect(server.address), models)
        print(f"seed {seed} round {round_no}: killed after {acked} writes; {summary}")


# --- 2. 100k keys, SIGKILL then SIGTERM ----------------------------------------------------------

def bulk_items(n):
    rng = random.Random(100)
    for i in range(n):
        key = b"bulk:%07d" % i
        yield key, (i * 7919 % (1 << 32), key + b"=" + rng.randbytes(rng.randrange(0, 90)))


def assert_all_present(conn, expected):
    got = fetch(conn, expected.keys(), batch=120)
    missing = [k for k in expected if k not in got]
    wrong = [k for k in expected if k in got and got[k][:2] != expected[k]]
    assert (len(missing), len(wrong)) == (0, 0), (missing[:5], wrong[:5])


def test_100k_keys_survive_sigkill_and_sigterm(pool, connect):
    pool.mb = 256
    n = 100_000
    expected = dict(bulk_items(n))
    server = pool.start()
    conn = connect(server.address)
    items = list(expected.items())
    for i in range(0, n, 1000):
        store_batch(conn, items[i:i + 1000])
    s = stats(conn)
    assert (int(s["curr_items"]), int(s["evictions"])) == (n, 0)
    server.kill()

    server = pool.start()
    assert recovered_count(server) == n
    assert not CLEAN_OPEN.search(server.log_text())
    conn = connect(server.address)
    s = stats(conn)
    assert (int(s["items_recovered"]), int(s["items_dropped"]), int(s["curr_items"])) == (n, 0, n)
    assert_all_present(conn, expected)
    stop_cleanly(server)

    server = pool.start()
    assert CLEAN_OPEN.search(server.log_text()), "the restart does not say the pool was clean"
    assert recovered_count(server) == n
    assert_all_present(connect(server.address), expected)


# --- 3. cas stays unique across restarts ---------------------------------------------------------

@pytest.mark.parametrize("stop", ["sigkill", "sigterm"])
def test_cas_after_restart_exceeds_every_cas_before(pool, connect, stop):
    server = pool.start()
    conn = connect(server.address)
    for i in range(20):
        assert call(conn, store_cmd(b"c%d" % i, b"v%d" % i)) == b"STORED\r\n"
    assert call(conn, store_cmd(b"n", b"1")) == b"STORED\r\n"
    for i in range(5):
        assert call(conn, b"incr n 1\r\n") == b"%d\r\n" % (i + 2)
    before = fetch(conn, [b"c%d" % i for i in range(20)] + [b"n"])
    assert len(before) == 21 and len({v[2] for v in before.values()}) == 21
    if stop == "sigkill":
        server.kill()
    else:
        stop_cleanly(server)

    server = pool.start()
    conn = connect(server.address)
    assert fetch(conn, before.keys()) == before  # values, flags and cas unchanged
    assert call(conn, store_cmd(b"fresh", b"x")) == b"STORED\r\n"
    fresh_cas = fetch(conn, [b"fresh"])[b"fresh"][2]
    assert fresh_cas > max(v[2] for v in before.values())


# --- 4. pool problems at start-up ------------------------------------------------------------

def make_pool(pool, connect, extra=()):
    server = pool.start()
    conn = connect(server.address)
    for i in range(50):
        assert call(conn, store_cmd(b"k%d" % i, b"value-%d" % i * 3, i)) == b"STORED\r\n"
    for key, value in extra:
        assert call(conn, store_cmd(key, value)) == b"STORED\r\n"
    stop_cleanly(server)


def assert_refused_unchanged(pool, engine=None):
    before = pool.sha256()
    status, err = pool.start_failing(engine)
    lines = err.strip().splitlines()
    assert status == 2, (status, err[-2000:])
    assert len(lines) == 1 and lines[0].startswith("pmcached: "), err[-2000:]
    assert pool.sha256() == before, "the refused pool file was modified"
    return lines[0]


def test_pool_of_another_persistent_engine_is_refused(pool, connect, engine, registered_engines):
    # Every other persistent engine pmcached registers (`--list-engines`) must refuse the pool.
    others = [e.name for e in registered_engines if e.persistent and e.name != engine]
    assert others
    make_pool(pool, connect)
    for other in others:
        line = assert_refused_unchanged(pool, other)
        assert engine in line and other in line, line


def test_volatile_engine_ignores_the_pool(pool, connect):
    make_pool(pool, connect)
    before = pool.sha256()
    server = pool.start(engine="dram")
    conn = connect(server.address)
    s = stats(conn)
    assert (s["engine"], s["engine_persistent"]) == ("dram", "no")
    assert call(conn, b"get k1\r\n") == b"END\r\n"  # dram starts empty
    assert call(conn, store_cmd(b"k1", b"dram")) == b"STORED\r\n"
    stop_cleanly(server)
    assert pool.sha256() == before


@pytest.mark.parametrize("damage", ["truncated", "random", "empty", "superblock"])
def test_damaged_pool_is_refused_and_left_alone(pool, connect, damage):
    if damage in ("truncated", "superblock"):
        make_pool(pool, connect)
    if damage == "truncated":
        os.truncate(pool.path, os.path.getsize(pool.path) // 2)
    elif damage == "random":
        pool.path.write_bytes(random.Random(7).randbytes(8 << 20))
    elif damage == "empty":
        pool.path.write_bytes(b"")
    else:  # the engine name in the superblock: its checksum or the name check must catch it
        with open(pool.path, "r+b") as f:
            superblock = f.read(4096)
            at = superblock.find(pool.engine.encode())
            assert at >= 0, "engine name not found in the superblock"
            f.seek(at)
            f.write(b"#")
    assert_refused_unchanged(pool)


ROOT_OFFSET = 64   # the superblock's root field: outside its checksum, read by the engine
CLEAN_OFFSET = 72  # the clean-shutdown flag, which an open used to clear before refusing


@pytest.mark.parametrize("closed", ["cleanly", "killed"])
@pytest.mark.parametrize("root", ["heap_start", "near_end", "misaligned"])
def test_pool_with_a_corrupt_index_is_refused_and_left_alone(pool, connect, closed, root):
    """Issue 15: a pool that passes the superblock checks but whose index is corrupt is refused
    by the engine or recovery; no byte may change (the clean flag, byte 72, used to)."""
    if closed == "cleanly":
        make_pool(pool, connect)
    else:
        server = pool.start()
        conn = connect(server.address)
        for i in range(50):
            assert call(conn, store_cmd(b"k%d" % i, b"v%d" % i)) == b"STORED\r\n"
        server.kill()
    size = os.path.getsize(pool.path)
    bogus = {"heap_start": 4096 + 8, "near_end": size - 64, "misaligned": 3 * 4096 + 3}[root]
    with open(pool.path, "r+b") as f:
        f.seek(CLEAN_OFFSET)
        assert f.read(1) == (b"\x01" if closed == "cleanly" else b"\x00")
        f.seek(ROOT_OFFSET)
        f.write(bogus.to_bytes(8, "little"))
    line = assert_refused_unchanged(pool)
    assert "corrupt" in line, line


def test_pool_in_a_missing_directory_is_refused(pool, tmp_path):
    """Issue 15: --pool in a directory that does not exist is refused; nothing is created."""
    missing = PoolFile(pool.factory, pool.argv, pool.engine, tmp_path / "no" / "such" / "p.pool")
    status, err = missing.start_failing()
    lines = err.strip().splitlines()
    assert status == 2, (status, err[-2000:])
    assert lines == [f"pmcached: --pool: directory '{tmp_path / 'no' / 'such'}' does not exist"]
    assert not (tmp_path / "no").exists()


def test_default_pool_directory_is_created(server_factory, pmcached_argv, engine, tmp_path):
    """Without --pool the default data/pmcached.pool works from a fresh directory: its
    directory is created (only the default's)."""
    command = shlex.join(pmcached_argv + ["--engine", engine, "-m", str(POOL_MB)])
    server = server_factory(command=command, cwd=tmp_path, fresh_pool=False)
    assert (tmp_path / "data" / "pmcached.pool").is_file()
    assert server.stop(), f"no exit on SIGTERM; its threads:\n{server.stacks}"
    assert server.proc.returncode == 0, server.log_text()[-3000:]
    (tmp_path / "data" / "pmcached.pool").unlink()


def test_key_flipped_into_a_neighbours_key_never_costs_the_neighbour(pool, connect):
    """Issue 15: a bit flip turned key009674 into key009774, another item's key, and recovery
    unlinked that intact neighbour by the damaged key. Only the corrupt item may go."""
    victim_value, neighbour_value = b"V" * 40, b"N" * 40
    make_pool(pool, connect, extra=[(b"flipkey_a", victim_value), (b"flipkey_c", neighbour_value)])
    data = pool.path.read_bytes()
    # The victim's record: its key followed (after the key) by its value.
    at = data.find(b"flipkey_a")
    while at >= 0 and data.find(victim_value, at, at + 64) < 0:
        at = data.find(b"flipkey_a", at + 1)
    assert at >= 0, "the victim's record is not in the pool"
    with open(pool.path, "r+b") as f:  # 'a' (0x61) -> 'c' (0x63): one bit
        f.seek(at + len(b"flipkey_"))
        f.write(b"c")

    server = pool.start()
    assert recovered_count(server) == 51
    conn = connect(server.address)
    s = stats(conn)
    assert (int(s["items_dropped"]), int(s["items_recovered"])) == (1, 51)
    assert call(conn, b"get flipkey_a\r\n") == b"END\r\n"
    assert_all_present(conn, {b"flipkey_c": (0, neighbour_value)})
    expected = {b"k%d" % i: (i, b"value-%d" % i * 3) for i in range(50)}
    assert_all_present(conn, expected)
    stop_cleanly(server)

    server = pool.start()
    conn = connect(server.address)
    assert_all_present(conn, {b"flipkey_c": (0, neighbour_value)})
    assert_all_present(conn, expected)


# Engines that find a corrupt record by position (IndexEngine::drop_corrupt); the radix engines
# find it by its key, so one whose damaged key leads elsewhere stays unreachable in the index and
# is reported again at every restart (issue 15, left open there).
DROPS_BY_POSITION = {"fptree", "wbtree", "nvtree"}


@pytest.mark.parametrize("trial", range(3))
def test_one_flipped_key_bit_drops_exactly_that_item_for_good(pool, connect, trial):
    """Issue 15: a bit flipped inside one item's key. Recovery drops that item and no other, says
    so in items_dropped, and the next restart finds nothing more to drop."""
    n = 2000
    rng = random.Random(1500 + trial)
    value = lambda i: b"value-%d-" % i + b"x" * (i % 50)
    server = pool.start()
    conn = connect(server.address)
    store_batch(conn, [(b"key%06d" % i, (0, value(i))) for i in range(n)])
    stop_cleanly(server)

    victim = rng.randrange(n)
    key = b"key%06d" % victim
    data = pool.path.read_bytes()
    at = data.find(key)
    while at >= 0 and data.find(value(victim), at, at + 80 + len(value(victim))) < 0:  # the record
        at = data.find(key, at + 1)
    assert at >= 0, "the victim's record is not in the pool"
    bit = rng.randrange(len(key) * 8)
    with open(pool.path, "r+b") as f:
        f.seek(at + bit // 8)
        f.write(bytes([data[at + bit // 8] ^ (1 << bit % 8)]))

    expected = {b"key%06d" % i: (0, value(i)) for i in range(n) if i != victim}
    server = pool.start()
    conn = connect(server.address)
    s = stats(conn)
    assert (int(s["items_dropped"]), int(s["curr_items"])) == (1, n - 1), (victim, bit)
    assert fetch(conn, [key]) == {}
    assert_all_present(conn, expected)
    stop_cleanly(server)

    server = pool.start()
    conn = connect(server.address)
    s = stats(conn)
    assert (int(s["items_dropped"]), int(s["curr_items"])) == (0, n - 1), (victim, bit)
    assert_all_present(conn, expected)


def test_flipped_byte_in_a_value_drops_only_that_item(pool, connect):
    victim = b"Q" * 64
    make_pool(pool, connect, extra=[(b"victim", victim)])
    data = pool.path.read_bytes()
    assert data.count(victim) == 1, "the value's bytes are not in the pool exactly once"
    at = data.find(victim) + 17
    with open(pool.path, "r+b") as f:
        f.seek(at)
        f.write(b"R")

    server = pool.start()
    log = server.log_text()
    assert re.search(r"recovery:", log), "no 'recovery:' warning for the corrupt item"
    assert recovered_count(server) == 50
    conn = connect(server.address)
    s = stats(conn)
    assert (int(s["items_dropped"]), int(s["items_recovered"])) == (1, 50)
    assert call(conn, b"get victim\r\n") == b"END\r\n"
    expected = {b"k%d" % i: (i, b"value-%d" % i * 3) for i in range(50)}
    assert_all_present(conn, expected)
    # The key is usable again, and the new version survives a crash.
    assert call(conn, store_cmd(b"victim", b"new")) == b"STORED\r\n"
    server.kill()
    server = pool.start()
    conn = connect(server.address)
    assert fetch(conn, [b"victim"])[b"victim"][:2] == (0, b"new")
    assert_all_present(conn, expected)


# --- 5. flush_all, 6. touch, and the other acknowledged writes ---------------------------------

def test_flush_all_survives_sigkill(pool, connect):
    server = pool.start()
    conn = connect(server.address)
    for i in range(50):
        assert call(conn, store_cmd(b"old%d" % i, b"o")) == b"STORED\r\n"
    assert call(conn, b"flush_all\r\n") == b"OK\r\n"
    new = {b"new%d" % i: (i, b"n%d" % i) for i in range(50)}
    for key, (flags, value) in new.items():
        assert call(conn, store_cmd(key, value, flags)) == b"STORED\r\n"
    server.kill()

    server = pool.start()
    conn = connect(server.address)
    assert fetch(conn, [b"old%d" % i for i in range(50)]) == {}
    assert_all_present(conn, new)


def ttl(conn, key):
    reply = call(conn, b"mg %s t\r\n" % key)
    m = re.fullmatch(rb"HD t(-?\d+)\r\n", reply)
    assert m, reply
    return int(m.group(1))


def test_touch_survives_sigkill(pool, connect):
    server = pool.start()
    conn = connect(server.address)
    assert call(conn, store_cmd(b"a", b"1", exptime=0)) == b"STORED\r\n"
    assert call(conn, store_cmd(b"b", b"2", exptime=3000)) == b"STORED\r\n"
    assert call(conn, store_cmd(b"c", b"3", exptime=3000)) == b"STORED\r\n"
    assert call(conn, b"touch a 5000\r\n") == b"TOUCHED\r\n"
    assert call(conn, b"touch b 0\r\n") == b"TOUCHED\r\n"
    conn.send(b"gat 7000 c\r\n")
    assert read_values(conn)[b"c"][1] == b"3"
    server.kill()

    server = pool.start()
    conn = connect(server.address)
    assert 4990 <= ttl(conn, b"a") <= 5000
    assert ttl(conn, b"b") == -1
    assert 6990 <= ttl(conn, b"c") <= 7000


def test_incr_decr_append_survive_sigkill(pool, connect):
    server = pool.start()
    conn = connect(server.address)
    assert call(conn, store_cmd(b"n", b"0")) == b"STORED\r\n"
    assert call(conn, store_cmd(b"log", b"")) == b"STORED\r\n"
    value = 0
    for i in range(300):
        if i % 3 == 2:
            value -= 1
            assert call(conn, b"decr n 1\r\n") == b"%d\r\n" % value
        else:
            value += 2
            assert call(conn, b"incr n 2\r\n") == b"%d\r\n" % value
        assert call(conn, b"append log 0 0 1\r\n%c\r\n" % (65 + i % 26)) == b"STORED\r\n"
    server.kill()

    server = pool.start()
    conn = connect(server.address)
    got = fetch(conn, [b"n", b"log"])
    assert got[b"n"][1] == b"%d" % value
    assert got[b"log"][1] == bytes(65 + i % 26 for i in range(300))


def test_stats_report_the_pool_and_its_flushes(pool, connect):
    server = pool.start()
    conn = connect(server.address)
    big = random.Random(5).randbytes(512 << 10)
    for i in range(10):
        assert call(conn, store_cmd(b"s%d" % i, b"x" * i, i)) == b"STORED\r\n"
    assert call(conn, store_cmd(b"big", big, 77)) == b"STORED\r\n"
    s = stats(conn)
    assert (s["engine"], s["engine_persistent"]) == (pool.engine, "yes")
    assert (int(s["items_recovered"]), int(s["items_dropped"])) == (0, 0)  # a new pool
    pm = stats(conn, b"pm")
    assert pm["pm_mode"] in ("emulated", "real")
    assert pm["pm_flush"]
    # Every insert publishes itself with at least one flushed line.
    assert int(pm["insert_ops"]) >= 11
    assert int(pm["insert_lines_flushed"]) >= int(pm["insert_ops"])
    server.kill()

    server = pool.start()
    conn = connect(server.address)
    s = stats(conn)
    assert (int(s["items_recovered"]), int(s["items_dropped"])) == (11, 0)
    assert recovered_count(server) == 11
    assert fetch(conn, [b"big"])[b"big"][:2] == (77, big)
    assert_all_present(conn, {b"s%d" % i: (i, b"x" * i) for i in range(10)})

"""Durability of the paged engines (bptree), end to end: the real pmcached on a pool (which holds
the redo log) and a page file (which holds the items), with a DRAM buffer pool a third of the
data or less (a tenth in one test), crashed with SIGKILL or stopped with SIGTERM, restarted on
the same two files.

The contract is the persistent engines' (test_durability.py, whose helpers this file uses): a
success reply is sent only once the change is durable -- here, once its redo unit is flushed and
fenced in the pool -- so a restart finds every acknowledged change with its value, flags and cas,
and a change in flight is wholly present or wholly absent. What is new is that most of the data
is not in memory: pages reach the page file by eviction and by checkpoints, recovery is the last
checkpoint plus a replay of the log, and a page file that does not belong to the pool is refused
(one line on stderr, exit status 2, both files byte-identical).

Every server gets a 4 MB buffer pool (--buffer-pool-mb) and a 16 MB log (--log-mb, so checkpoints
happen while the data is loaded); the data tests load 12 MB of keys and values, the 10x one
40+ MB. Each runs on two
layouts: the hash page table (CLOCK eviction) and the swizzling one with CAR. The restart time
for 1M items is measured by scripts/measure-paged-recovery.sh (a measurement, not a test).

Engines: PMCACHED_PAGED_ENGINES (comma or space separated, default "bptree").
Randomised trials print their seed; PMCACHED_DURABILITY_SEED=N repeats a run.
"""

import functools
import hashlib
import os
import pathlib
import random
import re
import shlex
import struct
import time

import pytest

from test_durability import (  # noqa: F401 (pmcached_argv is a fixture)
    BASE_SEED, CLEAN_OPEN, Model, PoolFile, Writer, assert_all_present, call, check_models,
    fetch, pmcached_argv, read_values, recovered_count, stats, stop_cleanly, store_batch, store_cmd,
    ttl)
from test_durability import write_until_killed as durability_write_until_killed

ENGINES = os.environ.get("PMCACHED_PAGED_ENGINES", "bptree").replace(",", " ").split()
MEMORY_MB = 8        # -m: a paged engine's default buffer pool, never a limit on the data
BUFFER_POOL_MB = 4   # the smallest the engine keeps (one 1 MB item's pages and a split path)
LOG_MB = 16
# Keys and values of the bulk data: more than 10x the buffer pool, loaded by the 10x test. The
# other data tests load its first SPILL_BYTES, 3x the buffer pool: loading them evicts pages and a
# restart reads them back from the page file, as with 10x, in a third of the time. The TSan build
# runs only the tests with concurrent clients, on less (tests/integration/CMakeLists.txt).
BULK_BYTES = int(os.environ.get("PMCACHED_PAGED_BULK_MB", 42)) << 20
SPILL_BYTES = min(BULK_BYTES, 3 * BUFFER_POOL_MB << 20)
IO_DEADLINE_S = 60  # a read of 120 large items through a sanitizer build's buffer pool
LAYOUTS = {
    "hash": ["--page-table", "hash"],
    "swizzle-car": ["--page-table", "swizzle", "--eviction", "car"],
}

pytestmark = pytest.mark.parametrize("engine", ENGINES)


# --- a pool and its page file ------------------------------------------------------------------

def digest(path):
    """SHA-256 of a file, or None if it does not exist."""
    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except FileNotFoundError:
        return None


class PagedPool(PoolFile):
    """A pool, its page file, and the flags a paged engine starts with. `page_file` None leaves
    --page-file out (the engine's default, the pool's path + ".pages")."""

    def __init__(self, factory, argv, engine, path, flags, page_file=None):
        super().__init__(factory, argv, engine, path, mb=MEMORY_MB)
        self.flags = list(flags)
        self.page_file = page_file

    @property
    def pages_path(self):
        return pathlib.Path(self.page_file or f"{self.path}.pages")

    def command(self, engine=None):
        argv = self.argv + ["--engine", engine or self.engine, "--pool", str(self.path),
                            "-m", str(self.mb), "--buffer-pool-mb", str(BUFFER_POOL_MB),
                            "--log-mb", str(LOG_MB)] + self.flags
        if self.page_file is not None:
            argv += ["--page-file", str(self.page_file)]
        return shlex.join(argv)

    def digests(self):
        return {"pool": digest(self.path), "page file": digest(self.pages_path)}


@pytest.fixture
def pools(request, server_factory, pmcached_argv, engine, tmp_path):  # noqa: F811
    """pools(name, layout) -> a PagedPool in the test's directory. The files (40+ MB) are deleted
    afterwards unless the test failed."""
    failed_before = request.session.testsfailed
    made = []

    def make(name="a", layout="hash"):
        pool = PagedPool(server_factory, pmcached_argv, engine, tmp_path / f"{name}.pool",
                         LAYOUTS[layout])
        made.append(pool)
        return pool

    yield make
    if request.session.testsfailed == failed_before:
        for pool in made:
            pool.path.unlink(missing_ok=True)
            pool.pages_path.unlink(missing_ok=True)


@pytest.fixture(params=list(LAYOUTS))
def paged(request, pools):
    return pools("a", request.param)


# --- the bulk data and what proves it did not fit ------------------------------------------------

LETTERS = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"


@functools.lru_cache(maxsize=2)
def bulk_items(total_bytes=BULK_BYTES):
    """[(key, (flags, value))] of `total_bytes` of keys and values: keys of 12 to 250 bytes, values
    from a few bytes to 120 KB (the larger ones in overflow pages); the same every call, and the
    items of a smaller size are the first of a larger one's."""
    rng = random.Random(18)
    items, total = [], 0
    while total < total_bytes:
        key = b"bulk:%06d:" % len(items)
        key += bytes(rng.choices(LETTERS, k=rng.choice([0, 8, 40, 250 - len(key)])))
        r = rng.random()
        size = rng.randrange(1, 200) if r < 0.4 else rng.randrange(200, 4000) if r < 0.75 else \
            rng.randrange(4000, 20000) if r < 0.95 else rng.randrange(20000, 120000)
        items.append((key, (rng.getrandbits(32), rng.randbytes(size))))
        total += len(key) + size
    return items


def load(conn, items, batch_bytes=1 << 19):
    """Pipelined sets of `items`, about `batch_bytes` per round trip."""
    batch, size = [], 0
    for item in items:
        batch.append(item)
        size += len(item[0]) + len(item[1][1])
        if size >= batch_bytes:
            store_batch(conn, batch)
            batch, size = [], 0
    if batch:
        store_batch(conn, batch)


def load_bulk(conn, size=SPILL_BYTES):
    items = bulk_items(size)
    load(conn, items)
    return dict(items)


def engine_stats(conn):
    return {k: int(v) if v.isdigit() else v for k, v in stats(conn, b"engine").items()}


def assert_data_did_not_fit(conn, size=SPILL_BYTES, times=2, read_back=False):
    """The buffer pool is at most 1/`times` of the `size` bytes loaded, so loading them evicted
    pages; after the data was `read_back`, reading it also missed in the buffer pool. (A load
    alone need not miss: its keys ascend, so it appends to a leaf that stays resident, and
    whether anything else reads an evicted page before the check, such as the expiry sweep, is
    timing.)"""
    e = engine_stats(conn)
    assert e["buffer_frames"] * e["page_size"] * times <= size, e
    assert e["buffer_evictions"] > 0, e
    if read_back:
        assert e["buffer_misses"] > 0, e
    return e


def assert_log_not_empty(conn):
    """Something was logged since the last checkpoint: a crash now leaves units to replay."""
    e = engine_stats(conn)
    assert e["log_used_bytes"] > 0, e


def assert_replayed(conn):
    e = engine_stats(conn)
    assert e["log_units_replayed"] > 0, e
    return e


def assert_recovered(server, conn, count):
    """The store's recovery counters and log line after a restart with `count` items."""
    s = stats(conn)
    assert (s["engine"], s["engine_persistent"]) == (server_engine(server), "yes")
    assert (int(s["items_recovered"]), int(s["items_dropped"])) == (count, 0), s
    assert int(s["curr_items"]) == count
    assert int(s["evictions"]) == 0
    assert recovered_count(server) == count
    return s


def server_engine(server):
    return server.argv[server.argv.index("--engine") + 1]


# --- SIGKILL under load: set, ms, append, prepend, incr, decr, delete, md ----------------------

COUNTER = re.compile(rb"\d{1,19} *")  # what incr and decr accept (below 2^64)


class PagedWriter(Writer):
    """test_durability's Writer (set, ms, delete, md, each acknowledged before the next) plus
    append/prepend on its items and incr/decr on its counters."""

    MAX_APPENDED = 64 << 10

    def one_write(self):
        r = self.m.rng.random()
        if r < 0.15 and self.m.present:
            return self.append()
        if r < 0.30:
            return self.count()
        return super().one_write()

    def append(self):
        m, rng = self.m, self.m.rng
        key = m.present[rng.randrange(len(m.present))]
        flags, old = m.acked[key]
        if len(old) > self.MAX_APPENDED:
            return True
        extra = rng.randbytes(rng.randrange(1, 3000))
        verb = rng.choice([b"append", b"prepend"])
        m.begin(key, (flags, old + extra if verb == b"append" else extra + old))
        reply = call(self.conn, store_cmd(key, extra, flags=0, verb=verb))
        assert reply == b"STORED\r\n", (key, verb, reply)
        return self.acknowledged()

    def count(self):
        """incr or decr a counter of this writer's, or start one (a set of a decimal value)."""
        m, rng = self.m, self.m.rng
        counters = [k for k in m.present[-200:] if COUNTER.fullmatch(m.acked[k][1])]
        if not counters:
            key = m.prefix + b"%d" % m.next_key
            m.next_key += 1
            m.present.append(key)
            flags, value = rng.getrandbits(32), b"%d" % rng.randrange(1 << 40)
            m.begin(key, (flags, value))
            assert call(self.conn, store_cmd(key, value, flags)) == b"STORED\r\n", key
            return self.acknowledged()
        key = rng.choice(counters)
        flags, value = m.acked[key]
        delta = rng.randrange(1, 1 << 20)
        if rng.random() < 0.7:
            new, verb = (int(value) + delta) % (1 << 64), b"incr"
        else:
            new, verb = max(0, int(value) - delta), b"decr"
        digits = b"%d" % new
        # memcached rewrites a number that got no longer in place, padded with spaces.
        m.begin(key, (flags, digits.ljust(len(value)) if len(digits) <= len(value) else digits))
        reply = call(self.conn, b"%s %s %d\r\n" % (verb, key, delta))
        assert reply == digits + b"\r\n", (key, verb, value, delta, reply)
        return self.acknowledged()

    def acknowledged(self):
        """The in-flight write was acknowledged: as the tail of Writer.one_write."""
        m = self.m
        key, state = m.in_flight
        m.acked[key] = state
        m.in_flight = None
        if m.rng.random() < 0.1:  # sample the cas of this version
            got = fetch(self.conn, [key])[key]
            assert got[:2] == state, key
            m.cas[key] = got[2]
        return self.shared.ack()


def write_until_killed(server, connect, models, target, cap=20000):
    """test_durability.write_until_killed with PagedWriter."""
    return durability_write_until_killed(server, connect, models, target, cap, writer=PagedWriter)


@pytest.mark.parametrize("trial", range(3))
def test_sigkill_under_load_loses_no_acknowledged_write(paged, connect, trial):
    seed = BASE_SEED + trial
    target = random.Random(seed).randrange(200, 4000)
    print(f"seed {seed} (repeat with PMCACHED_DURABILITY_SEED={BASE_SEED})")
    server = paged.start()
    bulk = load_bulk(connect(server.address, IO_DEADLINE_S))
    models = [Model(t, seed * 8 + t) for t in range(4)]
    acked = write_until_killed(server, connect, models, target)

    server = paged.start()
    conn = connect(server.address, IO_DEADLINE_S)
    present, summary = check_models(conn, models)
    assert_all_present(conn, bulk)
    assert_recovered(server, conn, present + len(bulk))
    assert not CLEAN_OPEN.search(server.log_text()), "a killed pool claims a clean close"
    e = engine_stats(conn)
    print(f"seed {seed}: killed after {acked} acknowledged writes (target {target}); {summary}; "
          f"{e['log_units_replayed']} log units replayed, {e['checkpoints']} checkpoints since")


def test_repeated_crashes_on_one_pool_and_page_file(paged, connect):
    """Crash, recover, write more over the same keys (replacing, appending to and deleting what
    earlier rounds wrote, so freed pages are reused), crash again: a recovery that got a page or
    the free list wrong shows up as a damaged item in a later round."""
    seed = BASE_SEED + 100
    print(f"seed {seed} (repeat with PMCACHED_DURABILITY_SEED={BASE_SEED})")
    rng = random.Random(seed)
    models = [Model(t, seed * 8 + t, p_delete=0.2, p_replace=0.5, max_replacements=1 << 30)
              for t in range(4)]
    server = paged.start()
    bulk = load_bulk(connect(server.address, IO_DEADLINE_S))
    for round_no in range(5):
        target = rng.randrange(200, 3000)
        acked = write_until_killed(server, connect, models, target)
        server = paged.start()
        conn = connect(server.address, IO_DEADLINE_S)
        present, summary = check_models(conn, models)
        assert_recovered(server, conn, present + len(bulk))
        print(f"seed {seed} round {round_no}: killed after {acked} writes; {summary}")
    assert_all_present(conn, bulk)


# --- data 10x the buffer pool, SIGKILL then SIGTERM ----------------------------------------------

def test_data_10x_the_buffer_pool_survives_sigkill_and_sigterm(paged, connect):
    server = paged.start()
    conn = connect(server.address, IO_DEADLINE_S)
    bulk = load_bulk(conn, BULK_BYTES)
    assert int(stats(conn)["curr_items"]) == len(bulk)
    assert_data_did_not_fit(conn, BULK_BYTES, times=10)
    assert_log_not_empty(conn)
    assert paged.pages_path.stat().st_size >= BULK_BYTES // 2  # the items are on the page file
    server.kill()

    server = paged.start()
    conn = connect(server.address, IO_DEADLINE_S)
    assert_recovered(server, conn, len(bulk))
    assert_replayed(conn)
    assert_all_present(conn, bulk)
    assert_data_did_not_fit(conn, BULK_BYTES, times=10, read_back=True)  # from the page file
    stop_cleanly(server)

    server = paged.start()
    assert CLEAN_OPEN.search(server.log_text()), "the restart does not say the pool was clean"
    conn = connect(server.address, IO_DEADLINE_S)
    assert_recovered(server, conn, len(bulk))
    # A clean stop checkpoints: nothing is left to replay.
    assert engine_stats(conn)["log_units_replayed"] == 0
    assert_all_present(conn, bulk)


def test_stats_engine_reports_the_replay_after_sigkill(pools, connect):
    pool = pools()
    server = pool.start()
    conn = connect(server.address, IO_DEADLINE_S)
    for i in range(20):
        assert call(conn, store_cmd(b"r%d" % i, b"v%d" % i, i)) == b"STORED\r\n"
    assert call(conn, b"delete r0\r\n") == b"DELETED\r\n"
    e = engine_stats(conn)
    assert e["checkpoints"] >= 0 and e["log_used_bytes"] > 0, e
    server.kill()

    server = pool.start()
    conn = connect(server.address, IO_DEADLINE_S)
    e = engine_stats(conn)
    # 21 acknowledged writes since the checkpoint of the (new) pool's start: 21 units at least.
    assert e["log_units_replayed"] >= 21, e
    # A SIGKILL tears no page write (the kernel finishes a write the process started), so the
    # double-write buffer had nothing to repair; it is there, and its start-up pass ran.
    assert e["double_write_slots"] > 0 and e["pages_repaired"] == 0, e
    assert "0 torn pages repaired" in server.log_text(), server.log_text()
    assert_recovered(server, conn, 19)
    assert_all_present(conn, {b"r%d" % i: (i, b"v%d" % i) for i in range(1, 20)})
    assert fetch(conn, [b"r0"]) == {}


# --- flush_all, touch, incr/decr/append: their pages evicted before the crash ------------------

def test_flush_all_survives_sigkill(paged, connect):
    server = paged.start()
    conn = connect(server.address, IO_DEADLINE_S)
    for i in range(50):
        assert call(conn, store_cmd(b"old%d" % i, b"o")) == b"STORED\r\n"
    assert call(conn, b"flush_all\r\n") == b"OK\r\n"
    bulk = load_bulk(conn)  # stored after the flush: they stay
    new = {b"new%d" % i: (i, b"n%d" % i) for i in range(50)}
    for key, (flags, value) in new.items():
        assert call(conn, store_cmd(key, value, flags)) == b"STORED\r\n"
    assert_data_did_not_fit(conn)
    server.kill()

    server = paged.start()
    conn = connect(server.address, IO_DEADLINE_S)
    assert fetch(conn, [b"old%d" % i for i in range(50)]) == {}
    assert_all_present(conn, new)
    assert_all_present(conn, bulk)


def test_touch_survives_sigkill(paged, connect):
    server = paged.start()
    conn = connect(server.address, IO_DEADLINE_S)
    assert call(conn, store_cmd(b"a", b"1", exptime=0)) == b"STORED\r\n"
    assert call(conn, store_cmd(b"b", b"2", exptime=3000)) == b"STORED\r\n"
    assert call(conn, store_cmd(b"c", b"3", exptime=3000)) == b"STORED\r\n"
    touched = time.monotonic()
    assert call(conn, b"touch a 5000\r\n") == b"TOUCHED\r\n"
    assert call(conn, b"touch b 0\r\n") == b"TOUCHED\r\n"
    conn.send(b"gat 7000 c\r\n")
    assert read_values(conn)[b"c"][1] == b"3"
    load_bulk(conn)  # evicts the pages of a, b and c
    assert_data_did_not_fit(conn)
    server.kill()

    server = paged.start()
    conn = connect(server.address, IO_DEADLINE_S)
    elapsed = int(time.monotonic() - touched) + 2  # seconds, and the server's clock ticks
    assert 5000 - elapsed <= ttl(conn, b"a") <= 5000
    assert ttl(conn, b"b") == -1
    assert 7000 - elapsed <= ttl(conn, b"c") <= 7000


def test_incr_decr_append_survive_sigkill(paged, connect):
    server = paged.start()
    conn = connect(server.address, IO_DEADLINE_S)
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
        if i == 150:
            bulk = load_bulk(conn)  # the pages of n and log leave the buffer pool half-way
    assert_data_did_not_fit(conn)
    server.kill()

    server = paged.start()
    conn = connect(server.address, IO_DEADLINE_S)
    got = fetch(conn, [b"n", b"log"])
    assert got[b"n"][1] == b"%d" % value
    assert got[b"log"][1] == bytes(65 + i % 26 for i in range(300))
    assert_all_present(conn, bulk)


# --- cas stays unique across restarts ------------------------------------------------------------

@pytest.mark.parametrize("stop", ["sigkill", "sigterm"])
def test_cas_after_restart_exceeds_every_cas_before(paged, connect, stop):
    server = paged.start()
    conn = connect(server.address, IO_DEADLINE_S)
    bulk = load_bulk(conn)
    assert call(conn, store_cmd(b"n", b"1")) == b"STORED\r\n"
    for i in range(5):
        assert call(conn, b"incr n 1\r\n") == b"%d\r\n" % (i + 2)
    before = fetch(conn, list(bulk) + [b"n"], batch=120)
    assert len(before) == len(bulk) + 1
    assert len({v[2] for v in before.values()}) == len(before)
    if stop == "sigkill":
        server.kill()
    else:
        stop_cleanly(server)

    server = paged.start()
    conn = connect(server.address, IO_DEADLINE_S)
    after = fetch(conn, before.keys(), batch=120)
    changed = [k for k in before if after.get(k) != before[k]]
    assert changed == [], f"{len(changed)} items differ in value, flags or cas: {changed[:5]}"
    assert call(conn, store_cmd(b"fresh", b"x")) == b"STORED\r\n"
    fresh_cas = fetch(conn, [b"fresh"])[b"fresh"][2]
    assert fresh_cas > max(v[2] for v in before.values())


# --- a full page file -----------------------------------------------------------------------------

def test_full_page_file_answers_out_of_memory_and_keeps_what_it_acknowledged(pools, connect):
    pool = pools()
    pool.flags += ["--page-file-mb", "8"]
    server = pool.start()
    conn = connect(server.address, IO_DEADLINE_S)
    stored, refused = {}, None
    for i in range(20000):  # 20 MB offered to an 8 MB page file
        key, value = b"full%05d" % i, random.Random(i).randbytes(1000)
        reply = call(conn, store_cmd(key, value, i))
        if reply == b"STORED\r\n":
            stored[key] = (i, value)
            continue
        assert reply == b"SERVER_ERROR out of memory storing object\r\n", (key, reply)
        refused = key
        break
    assert refused is not None, "an 8 MB page file took 20 MB"
    assert len(stored) > 1000
    assert int(stats(conn)["evictions"]) == 0
    assert fetch(conn, [refused]) == {}
    # Space freed by a delete is used again.
    assert call(conn, b"delete full00000\r\n") == b"DELETED\r\n"
    del stored[b"full00000"]
    assert call(conn, store_cmd(b"again", b"y" * 500)) == b"STORED\r\n"
    stored[b"again"] = (0, b"y" * 500)
    server.kill()

    server = pool.start()
    conn = connect(server.address, IO_DEADLINE_S)
    assert_recovered(server, conn, len(stored))
    assert_all_present(conn, stored)
    assert fetch(conn, [refused]) == {}


# --- page files that must be refused -------------------------------------------------------------

def make_small(pool, connect, n=300):
    """A pool with `n` items of 1 KB (some pages beside the header), closed cleanly."""
    server = pool.start()
    conn = connect(server.address, IO_DEADLINE_S)
    load(conn, [(b"k%05d" % i, (i, b"%05d" % i * 200)) for i in range(n)])
    stop_cleanly(server)
    assert pool.pages_path.stat().st_size > 4 * 16384


def assert_refused_unchanged(pool, *others):
    """Starts `pool`: one line on stderr, exit status 2, and neither its files nor those of the
    `others` changed (nor a missing one created). Returns the line."""
    before = [p.digests() for p in (pool,) + others]
    status, err = pool.start_failing()
    lines = err.strip().splitlines()
    assert status == 2, (status, err[-2000:])
    assert len(lines) == 1 and lines[0].startswith("pmcached: "), err[-2000:]
    assert [p.digests() for p in (pool,) + others] == before, "a refused start changed a file"
    return lines[0]


@pytest.mark.parametrize("cut", ["part_of_a_page", "whole_pages"])
def test_truncated_page_file_is_refused(pools, connect, cut):
    pool = pools()
    make_small(pool, connect)
    size = pool.pages_path.stat().st_size
    os.truncate(pool.pages_path, size - 1000 if cut == "part_of_a_page" else 2 * 16384)
    line = assert_refused_unchanged(pool)
    assert "truncated" in line and str(pool.pages_path) in line, line


# --- a page torn by a crash in the middle of its write ------------------------------------------

def double_write_images(pool_path):
    """[(lsn, page id)] of the page images in the pool's double-write buffer (layout in
    engine/buffer/double_write.cc: a 64-byte root "PMDBLWRT", then slots of a 64-byte header
    {u64 page id, u64 LSN, u64 checksum, ...} and the page), and the page size."""
    data = pool_path.read_bytes()
    at = data.find(b"PMDBLWRT")
    while at > 0 and at % 64 != 0:  # the root block is a cache line of its own
        at = data.find(b"PMDBLWRT", at + 1)
    assert at >= 0, "no double-write buffer in the pool"
    _, _, slots, page_size, _, region = struct.unpack_from("<QIIIIQ", data, at)
    images = []
    for i in range(slots):
        page, lsn = struct.unpack_from("<QQ", data, region + i * (64 + page_size))
        if page != 0:
            images.append((lsn, page))
    return images, page_size


def test_a_page_torn_during_a_checkpoint_is_repaired_at_the_next_start(pools, connect):
    """Power lost while the shutdown's checkpoint wrote a page: the file holds the first half of
    the new page and the rest of whatever was there. The next start puts the page back from the
    double-write buffer before it replays anything, and every item is there."""
    pool = pools()
    items = {b"k%05d" % i: (i, b"%05d" % i * 200) for i in range(300)}
    make_small(pool, connect, n=len(items))
    images, page_size = double_write_images(pool.path)
    assert images, "the checkpoint wrote no page through the double-write buffer"
    _, torn = max(images)  # the last page written
    with open(pool.pages_path, "r+b") as f:
        f.seek(torn * page_size + page_size // 2)
        f.write(b"\xa5" * (page_size // 2))

    server = pool.start()
    conn = connect(server.address, IO_DEADLINE_S)
    e = engine_stats(conn)
    assert e["pages_repaired"] == 1, e
    assert "1 torn pages repaired" in server.log_text(), server.log_text()
    assert_all_present(conn, items)


HEADER_FIELDS = {"magic": 0, "layout_version": 8, "page_size": 12, "file_id": 16,
                 "page_count": 24, "checksum": 32}


@pytest.mark.parametrize("field", list(HEADER_FIELDS))
def test_page_file_with_a_damaged_header_is_refused(pools, connect, field):
    pool = pools()
    make_small(pool, connect)
    with open(pool.pages_path, "r+b") as f:
        f.seek(HEADER_FIELDS[field])
        byte = f.read(1)
        f.seek(HEADER_FIELDS[field])
        f.write(bytes([byte[0] ^ 0x10]))
    line = assert_refused_unchanged(pool)
    assert str(pool.pages_path) in line, line


def test_page_file_of_another_pool_is_refused(pools, connect):
    a, b = pools("a"), pools("b")
    make_small(a, connect)
    make_small(b, connect, n=200)
    own_pages = a.pages_path
    own_before = digest(own_pages)
    a.page_file = b.pages_path  # A's pool with B's page file
    line = assert_refused_unchanged(a, b)
    assert digest(own_pages) == own_before
    a.page_file = None  # A with its own page file is still whole
    assert_all_present(connect(a.start().address, IO_DEADLINE_S),
                       {b"k%05d" % i: (i, b"%05d" % i * 200) for i in range(300)})
    assert str(b.pages_path) in line, f"the refusal does not name the page file: {line}"


def test_missing_page_file_of_an_existing_pool_is_refused(pools, connect):
    pool = pools()
    make_small(pool, connect)
    pool.pages_path.unlink()
    line = assert_refused_unchanged(pool)
    assert str(pool.pages_path) in line, line


def test_page_file_with_pages_beside_a_new_pool_is_refused(pools, connect):
    pool = pools()
    make_small(pool, connect)
    pool.path.unlink()
    line = assert_refused_unchanged(pool)
    assert str(pool.pages_path) in line, line


def test_page_file_of_another_page_size_is_refused(pools, connect):
    pool = pools()
    make_small(pool, connect)
    pool.flags += ["--page-size", "4096"]
    line = assert_refused_unchanged(pool)
    assert str(pool.pages_path) in line and "4096" in line, line

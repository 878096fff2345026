"""A paged engine (bptree) with a buffer pool far smaller than its data: memccapable passes over a
page file holding ten times the pool, and random commands over a key space ten times the pool give
exactly what a model of memcached's semantics says.

The server under test is PMCACHED_SERVER, registered by tests/integration/CMakeLists.txt for every
paged engine with a small buffer pool (--buffer-pool-mb 4) and each page table.
"""

import random
import shutil
import subprocess

import pytest
from pymemcache.client.base import Client

from test_memccapable import ASCII_TESTS, MEMCCAPABLE, RESULT_LINE

POOL_MB = 4
DATA_MB = 10 * POOL_MB + 4  # a little more than ten times the pool


def engine_stats(address):
    client = Client(address)
    try:
        return {k.decode(): v.decode() if isinstance(v, bytes) else v
                for k, v in client.stats("engine").items()}
    finally:
        client.close()


def preload(address, keys, value_size):
    """Sets `keys` (bytes) with values derived from the key, pipelined with noreply, then checks
    the last one answers (so every set before it was executed)."""
    client = Client(address)
    try:
        for key in keys:
            client.set(key, value_for(key, value_size), noreply=True)
        assert client.get(keys[-1]) == value_for(keys[-1], value_size)
    finally:
        client.close()


def value_for(key, size):
    return (key * (size // len(key) + 1))[:size]


@pytest.fixture
def small_pool_server(server_factory):
    return server_factory("--buffer-pool-mb", str(POOL_MB), "-m", str(POOL_MB)).address


@pytest.mark.skipif(not shutil.which("memccapable"),
                    reason="memccapable (libmemcached-tools) not installed")
def test_memccapable_passes_over_data_ten_times_the_buffer_pool(small_pool_server):
    host, port = small_pool_server
    value_size = 4000
    keys = [b"preload%07d" % i for i in range(DATA_MB * 1024 * 1024 // value_size)]
    preload(small_pool_server, keys, value_size)
    before = engine_stats(small_pool_server)
    assert int(before["buffer_evictions"]) > 0, before  # the data did not fit
    proc = subprocess.run([MEMCCAPABLE, "-h", host, "-p", str(port), "-a", "-t", "10"],
                          capture_output=True, text=True, timeout=120)
    output = proc.stdout + proc.stderr
    results = {}
    for line in proc.stdout.splitlines():
        m = RESULT_LINE.match(line)
        if m:
            results[m.group("name")] = m.group("result")
    assert list(results) == ASCII_TESTS, output
    assert {n: r for n, r in results.items() if r != "pass"} == {}, output
    assert proc.returncode == 0, output


def test_random_commands_over_ten_times_the_buffer_pool_match_a_model(small_pool_server):
    """set/add/replace/append/prepend/incr/delete/touch/cas/gets on 12k keys of 4 KB (~48 MB over a
    4 MB pool), each reply compared with a dictionary model; then every key read back."""
    rng = random.Random(18)
    client = Client(small_pool_server)
    model = {}
    keys = [b"k%06d" % i for i in range(12000)]
    value_size = 4000
    for key in keys:  # the data first, so that every later command meets a cold page
        value = value_for(key, value_size)
        assert client.set(key, value, noreply=False)
        model[key] = value
    for step in range(6000):
        key = rng.choice(keys)
        op = rng.choice(["get", "set", "add", "replace", "append", "prepend", "incr", "delete",
                         "touch", "cas"])
        current = model.get(key)
        if op == "get":
            assert client.get(key) == current, (step, key)
        elif op == "set":
            value = value_for(key + b"%d" % step, rng.randrange(1, 6000))
            assert client.set(key, value, noreply=False)
            model[key] = value
        elif op == "add":
            value = b"added%d" % step
            assert client.add(key, value, noreply=False) == (current is None), (step, key)
            model.setdefault(key, value)
        elif op == "replace":
            value = b"replaced%d" % step
            assert client.replace(key, value, noreply=False) == (current is not None)
            if current is not None:
                model[key] = value
        elif op in ("append", "prepend"):
            piece = b"+%d" % step
            stored = getattr(client, op)(key, piece, noreply=False)
            assert stored == (current is not None), (step, key, op)
            if current is not None:
                model[key] = current + piece if op == "append" else piece + current
        elif op == "incr":
            if current is None:
                assert client.incr(key, 1) is None
            elif current.isdigit():
                expected = (int(current) + 7) % 2**64
                assert client.incr(key, 7) == expected
                model[key] = str(expected).encode()
            else:
                assert client.set(key, b"%d" % step, noreply=False)
                model[key] = b"%d" % step
        elif op == "delete":
            assert client.delete(key, noreply=False) == (current is not None)
            model.pop(key, None)
        elif op == "touch":
            assert client.touch(key, 0, noreply=False) == (current is not None)
        elif op == "cas":
            value, cas = client.gets(key)
            assert value == current
            if current is not None:
                assert client.cas(key, b"cas%d" % step, cas, noreply=False)
                model[key] = b"cas%d" % step
                assert client.cas(key, b"stale", cas, noreply=False) is False
    for key in keys:
        assert client.get(key) == model.get(key), key
    stats = engine_stats(small_pool_server)
    assert int(stats["buffer_misses"]) > 0 and int(stats["buffer_evictions"]) > 0, stats
    assert int(stats["items"]) == len(model)
    client.close()

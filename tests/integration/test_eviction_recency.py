"""Eviction keeps the newest data (issue 15): a full cache evicts the least recently used items.

Sets of random sizes totalling 3 x `-m` overflow the cache many times over; afterwards the most
recent writes whose sizes add up to half of `-m` must be readable (>= 95%). Keys are random, so
key order says nothing about age. Before the fix the persistent engines kept only ~10-40% of
them (chunk evacuation emptied the chunks being filled), and the volatile engine's key-order
CLOCK evicted at random (~86-90%).

Reference figures with the workload of issue 15 (-m 16, 6 x written): memcached 1.6.18 keeps ~77% (its
1 MB slab pages are few at -m 16, and classes keep the pages of their first fill), so running
this file against memcached fails: the bar here is higher than memcached's own.

Since issue 20 pmcached's heaps have memcached's 1 MiB pages and size classes, so this file runs
with -m 40 -f 2 (and writes 3 x -m): with the default factor 100 B..50 KB spans ~25 classes, more
than the pages a 16 MB pool has beside its index nodes, and every class change must empty a page
whatever the policy (as in memcached; the DRAM heap, like memcached, lets each class have its first
page beyond -m). With -f 2 the sizes span 9 classes and 40 MB leaves every class a few pages, so
the test measures what it is about: which items the store keeps.
"""

import random

import pytest
from pymemcache.client.base import Client

MEMORY_MB = 40
WRITTEN = 3 * (MEMORY_MB << 20)   # bytes of values written
RECENT = (MEMORY_MB << 20) // 2   # the newest writes that must survive, in bytes
FLAGS = ("-m", MEMORY_MB, "-f", "2")
SEED = 15
BATCH = 32                        # sets per pipelined round trip


def connect(server):
    return Client(server.address, connect_timeout=5, timeout=30, default_noreply=False)


@pytest.fixture
def client(server_factory):
    c = connect(server_factory(*FLAGS))
    yield c
    c.close()


def write_mixed_sizes(client, rng, max_size, hot=None):
    """Sets random keys with values of 100 B..max_size until WRITTEN bytes; returns the (key,
    size) pairs in write order. With `hot`, those keys are read after every batch."""
    blob = bytes(rng.getrandbits(8) for _ in range(max_size))
    writes = []
    total = 0
    while total < WRITTEN:
        batch = {}
        for _ in range(BATCH):
            size = rng.randint(100, max_size)
            key = f"{rng.getrandbits(48):012x}:{len(writes)}"  # random order, unique
            batch[key] = blob[:size]
            writes.append((key, size))
            total += size
        failed = client.set_many(batch)
        assert not failed, f"{len(failed)} sets refused (out of memory?)"
        if hot:
            missing = set(hot) - set(client.get_many(hot))
            assert not missing, f"read all along, evicted after {len(writes)} sets: {missing}"
    return writes


def readable_share_of_newest(client, writes):
    newest = []
    total = 0
    for key, size in reversed(writes):
        if total + size > RECENT:
            break
        newest.append((key, size))
        total += size
    found = 0
    for i in range(0, len(newest), 100):
        chunk = newest[i:i + 100]
        got = client.get_many([key for key, _ in chunk])
        found += sum(1 for key, size in chunk if len(got.get(key, b"")) == size)
    return found, len(newest)


@pytest.mark.parametrize("max_size", [50_000, 10_000])
def test_the_newest_writes_survive_mixed_size_overwrites(client, max_size):
    rng = random.Random(SEED)
    writes = write_mixed_sizes(client, rng, max_size)
    found, newest = readable_share_of_newest(client, writes)
    assert newest > 100
    assert found * 100 >= newest * 95, f"only {found} of the {newest} newest writes readable"
    stats = client.stats()
    assert stats[b"evictions"] > 0


def test_a_restarted_full_cache_evicts_the_items_it_recovered_first(server_factory, tmp_path):
    # The recency lists are volatile: a restart rebuilds them from the recovered items, oldest
    # first. (With `dram` nothing is recovered and this is the first test again.)
    pool = tmp_path / "restart.pool"
    server = server_factory(*FLAGS, "--pool", pool)
    rng = random.Random(SEED + 2)
    c = connect(server)
    write_mixed_sizes(c, rng, 10_000)
    c.close()
    assert server.stop(), "the server did not stop on SIGTERM"
    c = connect(server_factory(*FLAGS, "--pool", pool))
    writes = write_mixed_sizes(c, rng, 10_000)
    found, newest = readable_share_of_newest(c, writes)
    c.close()
    assert found * 100 >= newest * 95, f"only {found} of the {newest} newest writes readable"


def test_items_read_all_along_are_not_evicted(client):
    # A read sets the item's referenced bit: it gets a second chance each time the eviction
    # walk reaches it, so items read between every batch of writes stay.
    rng = random.Random(SEED + 1)
    hot = [f"hot:{i}" for i in range(20)]
    assert not client.set_many({key: b"h" * rng.randint(100, 10_000) for key in hot})
    write_mixed_sizes(client, rng, 10_000, hot=hot)
    assert set(client.get_many(hot)) == set(hot)

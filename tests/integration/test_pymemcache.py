"""The calls a real application makes, through pymemcache.client.base.Client."""

import pytest
from pymemcache.client.base import Client
from pymemcache.exceptions import MemcacheServerError


@pytest.fixture
def client(server):
    c = Client(server, connect_timeout=5, timeout=10, default_noreply=False)
    yield c
    c.close()


def test_set_get(client, server):
    assert client.set("k", b"hello") is True
    assert client.get("k") == b"hello"
    assert client.get("missing") is None
    assert client.set("k", b"world", flags=7) is True
    with_flags = Client(server, connect_timeout=5, timeout=10,
                        deserializer=lambda key, value, flags: (value, flags))
    try:
        assert with_flags.get("k") == (b"world", 7)
    finally:
        with_flags.close()


def test_get_many(client):
    for i in range(10):
        client.set(f"m{i}", b"v%d" % i)
    got = client.get_many([f"m{i}" for i in range(12)])
    assert got == {f"m{i}": b"v%d" % i for i in range(10)}


def test_gets_and_cas(client):
    assert client.gets("nope") == (None, None)
    client.set("c", b"1")
    value, cas = client.gets("c")
    assert value == b"1" and int(cas) > 0
    assert client.cas("c", b"2", cas) is True
    assert client.cas("c", b"3", cas) is False          # EXISTS: cas moved on
    assert client.cas("missing", b"x", cas) is None     # NOT_FOUND
    value2, cas2 = client.gets("c")
    assert value2 == b"2" and int(cas2) != int(cas)


def test_add_replace(client):
    assert client.add("a", b"1") is True
    assert client.add("a", b"2") is False
    assert client.replace("a", b"3") is True
    assert client.replace("nope", b"3") is False
    assert client.get("a") == b"3"
    assert client.get("nope") is None


def test_append_prepend(client):
    assert client.append("ap", b"x") is False
    assert client.prepend("ap", b"x") is False
    client.set("ap", b"mid")
    assert client.append("ap", b">>") is True
    assert client.prepend("ap", b"<<") is True
    assert client.get("ap") == b"<<mid>>"


def test_delete(client):
    client.set("d", b"1")
    assert client.delete("d") is True
    assert client.delete("d") is False
    assert client.get("d") is None


def test_incr_decr(client):
    assert client.incr("n", 1) is None
    client.set("n", b"10")
    assert client.incr("n", 5) == 15
    assert client.decr("n", 20) == 0
    assert client.incr("n", 18446744073709551615) == 18446744073709551615
    assert client.incr("n", 1) == 0


def test_touch(client):
    assert client.touch("t", 100) is False
    client.set("t", b"v", expire=1000)
    assert client.touch("t", 100) is True
    assert client.get("t") == b"v"
    assert client.touch("t", -1) is True  # negative exptime: expired at once
    assert client.get("t") is None


def test_flush_all(client):
    for i in range(5):
        client.set(f"f{i}", b"v")
    assert client.flush_all() is True
    assert client.get_many([f"f{i}" for i in range(5)]) == {}
    assert client.set("after", b"v") is True
    assert client.get("after") == b"v"


def test_version_and_stats(client):
    version = client.version()
    assert isinstance(version, bytes) and version
    client.set("s", b"v")
    client.get("s")
    client.get("nope")
    stats = client.stats()
    for name in (b"pid", b"uptime", b"curr_connections", b"cmd_get", b"cmd_set", b"get_hits",
                 b"get_misses", b"curr_items"):
        assert name in stats, name
    assert stats[b"cmd_set"] >= 1 and stats[b"get_hits"] >= 1 and stats[b"get_misses"] >= 1
    assert stats[b"curr_items"] == 1


def test_noreply_variants(server):
    quiet = Client(server, connect_timeout=5, timeout=10, default_noreply=True)
    loud = Client(server, connect_timeout=5, timeout=10, default_noreply=False)
    try:
        assert quiet.set("q", b"1") is True
        assert quiet.add("q2", b"2") is True
        assert quiet.replace("q", b"3") is True
        assert quiet.append("q", b"4") is True
        assert quiet.prepend("q", b"5") is True
        assert quiet.set("gone", b"x") is True
        assert quiet.delete("gone", noreply=True) is True
        quiet.set("n", b"5")
        assert quiet.incr("n", 2, noreply=True) is None
        assert quiet.decr("n", 1, noreply=True) is None
        assert quiet.touch("q", 500, noreply=True) is True
        # the same connection still answers in order: noreply wrote nothing back
        assert quiet.get("q") == b"534"
        assert loud.get_many(["q", "q2", "gone", "n"]) == {"q": b"534", "q2": b"2", "n": b"6"}
        assert quiet.flush_all(noreply=True) is True
        # a reply on the same connection proves the flush ran (other connections may race it)
        assert quiet.get("q") is None
        assert loud.get("q2") is None
    finally:
        quiet.close()
        loud.close()


def test_binary_values(client):
    every_byte = bytes(range(256)) * 8 + b"\r\nEND\r\n\x00"
    assert client.set("bin", every_byte) is True
    assert client.get("bin") == every_byte
    assert client.set("empty", b"") is True
    assert client.get("empty") == b""


def test_value_size_limit(client):
    near_limit = b"x" * (1000 * 1024)
    assert client.set("big", near_limit) is True
    assert client.get("big") == near_limit
    with pytest.raises(MemcacheServerError):
        client.set("too_big", b"y" * (1024 * 1024 + 1))
    # the server swallowed the oversized block and keeps working on the same connection
    assert client.get("too_big") is None
    assert client.set("after", b"ok") is True
    assert client.get("after") == b"ok"
    assert client.get("big") == near_limit


def test_many_keys(client):
    items = {f"key:{i:05d}": (b"value-%d-" % i) * (1 + i % 17) for i in range(2000)}
    assert client.set_many(items) == []
    keys = list(items)
    for start in range(0, len(keys), 200):
        batch = keys[start:start + 200]
        assert client.get_many(batch) == {k: items[k] for k in batch}

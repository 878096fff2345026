"""Meta-protocol features that memcached's protocol.txt documents but memcached 1.6.18 (the
Debian reference in test_conformance_diff.py) predates: the E(token) flag (explicit new cas) on
mg/ms/md/ma, md's x flag (drop the value, keep the item), and ms N(token) autovivify in append
mode. pmcached implements them as documented, so these tests hold for pmcached (and newer
memcached), not for 1.6.18.
"""


def test_ms_with_explicit_cas_uses_it(server, connect):
    c = connect(server)
    assert c.request(b"ms k 2 E1000 c\r\nab\r\n") == b"HD c1000\r\n"
    assert c.request(b"mg k c v\r\n") == b"VA 2 c1000\r\nab\r\n"
    # The explicit cas is what a later compare-and-swap must present.
    assert c.request(b"ms k 2 C999\r\ncd\r\n") == b"EX\r\n"
    assert c.request(b"ms k 2 C1000 E2000 c\r\ncd\r\n") == b"HD c2000\r\n"


def test_mg_vivify_with_explicit_cas(server, connect):
    c = connect(server)
    assert c.request(b"mg viv N30 E77 c\r\n") == b"HD c77 W\r\n"


def test_ma_with_explicit_cas(server, connect):
    c = connect(server)
    assert c.request(b"ma n N0 J5 E50 c v\r\n") == b"VA 1 c50\r\n5\r\n"
    assert c.request(b"ma n E60 c v\r\n") == b"VA 1 c60\r\n6\r\n"


def test_md_invalidate_with_explicit_cas_then_stale_get(server, connect):
    c = connect(server)
    assert c.request(b"ms k 2\r\nab\r\n") == b"HD\r\n"
    assert c.request(b"md k I E500\r\n") == b"HD\r\n"
    assert c.request(b"mg k c v\r\n") == b"VA 2 c500 X W\r\nab\r\n"


def test_md_x_keeps_the_item_without_its_value(server, connect):
    c = connect(server)
    assert c.request(b"ms k 5 F9\r\nhello\r\n") == b"HD\r\n"
    assert c.request(b"md k x\r\n") == b"HD\r\n"
    assert c.request(b"mg k v s\r\n") == b"VA 0 s0\r\n\r\n"


def test_ms_append_vivifies_a_missing_item_with_N(server, connect):
    c = connect(server)
    assert c.request(b"ms k 2 MA N30\r\nab\r\n") == b"HD\r\n"
    assert c.request(b"mg k v t\r\n") in (b"VA 2 t30\r\nab\r\n", b"VA 2 t29\r\nab\r\n")
    assert c.request(b"ms k 2 MA N30\r\ncd\r\n") == b"HD\r\n"
    assert c.request(b"mg k v\r\n") == b"VA 4\r\nabcd\r\n"
    # Without N, append to a missing item is still not stored.
    assert c.request(b"ms other 2 MA\r\nab\r\n") == b"NS\r\n"

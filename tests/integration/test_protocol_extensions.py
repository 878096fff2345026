"""Meta-protocol flags that memcached's newer protocol.txt documents but memcached 1.6.18 (the
specification, see README "Protocol support") rejects or ignores: the E(token) flag (explicit
new cas) on mg/ms/md/ma, md's x flag (drop the value, keep the item), and ms N(token)
autovivify in append mode. pmcached answers as 1.6.18 does (issue 15, K8); these tests pin
that decision, and hold for 1.6.18 itself (PMCACHED_SERVER="/usr/bin/memcached -U 0").
"""


def test_explicit_cas_flag_is_invalid_everywhere(server, connect):
    c = connect(server)
    assert c.request(b"ms k 2 E1000 c\r\nab\r\n") == b"CLIENT_ERROR invalid flag\r\n"
    assert c.request(b"mg k c v\r\n") == b"EN\r\n"
    assert c.request(b"mg viv N30 E77 c\r\n") == b"CLIENT_ERROR invalid flag\r\n"
    assert c.request(b"ma n N0 J5 E50 c v\r\n") == b"CLIENT_ERROR invalid or duplicate flag\r\n"
    assert c.request(b"ms k 2\r\nab\r\n") == b"HD\r\n"
    assert c.request(b"md k I E500\r\n") == b"CLIENT_ERROR invalid or duplicate flag\r\n"
    assert c.request(b"mg k v\r\n") == b"VA 2\r\nab\r\n"


def test_md_x_is_invalid_and_keeps_the_value(server, connect):
    c = connect(server)
    assert c.request(b"ms k 5 F9\r\nhello\r\n") == b"HD\r\n"
    assert c.request(b"md k x\r\n") == b"CLIENT_ERROR invalid or duplicate flag\r\n"
    assert c.request(b"mg k v s f\r\n") == b"VA 5 s5 f9\r\nhello\r\n"


def test_ms_append_with_N_does_not_create_a_missing_item(server, connect):
    c = connect(server)
    assert c.request(b"ms k 2 MA N30\r\nab\r\n") == b"NS\r\n"
    assert c.request(b"ms k 2 MP N30\r\nab\r\n") == b"NS\r\n"
    assert c.request(b"mg k v\r\n") == b"EN\r\n"
    assert c.request(b"ms k 2\r\nab\r\n") == b"HD\r\n"
    assert c.request(b"ms k 2 MA N30\r\ncd\r\n") == b"HD\r\n"
    assert c.request(b"mg k v t\r\n") == b"VA 4 t-1\r\nabcd\r\n"

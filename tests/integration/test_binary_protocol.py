"""The memcached binary protocol: libmemcached's memccapable -b (27/27) and frames checked with raw
sockets. The byte-for-byte comparison with memcached is in test_conformance_diff.py."""

import struct

from binary_frames import (ADD, ADDQ, DELETEQ, GET, GETK, GETKQ, GETQ, INCR, INCRQ, SET, SETQ,
                           exchange, frame, incr_extras, read_frame, set_extras)
from test_memccapable import run_memccapable


def test_memccapable_binary_all_27_pass(server):
    results, output = run_memccapable(server, "-b")
    assert len(results) == 27, output
    assert all(r == "pass" for r in results.values()), output


def test_the_first_byte_picks_the_protocol_for_the_connection(server, connect):
    binary = connect(server)
    assert exchange(binary, frame(SET, b"k", set_extras(7), b"v")) == \
        [(SET, 0, 0, exchange(binary, frame(GET, b"k"))[0][3], b"", b"", b"")]
    text = connect(server)
    assert text.request(b"get k\r\n") == b"VALUE k 7 1\r\nv\r\nEND\r\n"
    # Text on a binary connection is a frame with a bad magic: closed without a reply.
    binary.send(b"get k\r\n" + b" " * 24)
    assert binary.closed_by_peer()
    assert binary.buf == b""


def test_quiet_opcodes_send_only_errors_and_hits(server, connect):
    conn = connect(server)
    got = exchange(conn, frame(SETQ, b"a", set_extras(), b"1", opaque=1)
                   + frame(ADDQ, b"a", set_extras(), b"2", opaque=2)      # exists: sent
                   + frame(GETQ, b"missing", opaque=3)                   # miss: silent
                   + frame(GETKQ, b"a", opaque=4)                        # hit: sent
                   + frame(DELETEQ, b"missing", opaque=5)                # miss: sent
                   + frame(INCRQ, b"n", incr_extras(1, 40), opaque=6))   # created: silent
    assert [(op, status, opaque) for op, status, opaque, *_ in got] == \
        [(ADDQ, 0x02, 2), (GETKQ, 0, 4), (DELETEQ, 0x01, 5)]
    assert got[1][4:] == (b"\0\0\0\0", b"a", b"1")
    assert got[2][6] == b"Not found"
    value = exchange(conn, frame(INCR, b"n", incr_extras(2, 0, 0xFFFFFFFF)))[0][6]
    assert struct.unpack(">Q", value)[0] == 42


def test_a_too_large_set_answers_e2big_and_unlinks_the_old_value(server, connect):
    conn = connect(server)
    exchange(conn, frame(SET, b"k", set_extras(), b"old"))
    got = exchange(conn, frame(SETQ, b"k", set_extras(), b"x" * (2 << 20))
                   + frame(GET, b"k", opaque=9))
    assert [(op, status, value) for op, status, _, _, _, _, value in got] == \
        [(SETQ, 0x03, b"Too large."), (GET, 0x01, b"Not found")]


def test_a_pipeline_of_sets_answers_in_order_with_what_comes_between_them(server, connect):
    """A run of SET and SETQ waits for the group commit as a run of text sets does
    (server/connection.h), 150 of them here: a SET answers with its opaque and a cas of its
    own, a SETQ only if it fails; keys set twice keep the later value; a failing ADD, an
    oversized SETQ and GETKs of keys set just before answer between them."""
    conn = connect(server)
    data, expected, final = [], [], {}
    for i in range(150):
        key = b"p%d" % (i % 100)  # the last 50 set keys of the first 50 again
        value = b"v%d" % i
        op = SET if i % 3 == 0 else SETQ
        data.append(frame(op, key, set_extras(i), value, opaque=i))
        if op == SET:
            expected.append((SET, 0, i, b"", b"", b""))
        final[key] = (i, value)
        if i == 40:
            data.append(frame(ADD, key, set_extras(), b"no", opaque=1040))
            expected.append((ADD, 0x02, 1040, b"", b"", b"Data exists for key."))
        if i == 70:
            data.append(frame(SETQ, b"big", set_extras(), b"x" * (2 << 20), opaque=1070))
            expected.append((SETQ, 0x03, 1070, b"", b"", b"Too large."))
        if i in (30, 120):  # this set's key and the one before
            for k in (b"p%d" % (i % 100), b"p%d" % ((i - 1) % 100)):
                data.append(frame(GETK, k, opaque=2000 + i))
                expected.append((GETK, 0, 2000 + i, set_extras(final[k][0])[:4], k,
                                 final[k][1]))
    got = exchange(conn, b"".join(data))
    assert [(op, status, opaque, extras, key, value)
            for op, status, opaque, _, extras, key, value in got] == expected
    cas = [f[3] for f in got if f[0] == SET]
    assert 0 not in cas and len(set(cas)) == len(cas)
    got = exchange(conn, b"".join(frame(GETK, key, opaque=n) for n, key in enumerate(final)))
    assert [(key, extras, value) for _, _, _, _, extras, key, value in got] == \
        [(key, set_extras(flags)[:4], value) for key, (flags, value) in final.items()]
    assert exchange(conn, frame(GETQ, b"big")) == []


def test_malformed_frames_get_memcacheds_answer_never_a_hang(server, connect):
    conn = connect(server)
    conn.send(frame(GET, b"k", extras=b"1234"))  # GET takes no extras: EINVAL, then close
    assert read_frame(conn)[1:2] == (0x04,)
    assert conn.closed_by_peer()
    conn = connect(server)
    assert exchange(conn, frame(0x50))[0][1::5] == (0x81, b"Unknown command")
    conn.send(frame(GET, b"abc", bodylen=2) + b"xy")  # key longer than the body
    assert read_frame(conn)[1] == 0x81
    assert conn.closed_by_peer()

"""The memcached binary protocol: libmemcached's memccapable -b (27/27) and frames checked with raw
sockets. The byte-for-byte comparison with memcached is in test_conformance_diff.py."""

import shutil
import struct
import subprocess

import pytest

from binary_frames import (ADDQ, DELETEQ, GET, GETKQ, GETQ, INCR, INCRQ, SET, SETQ, exchange,
                           frame, incr_extras, read_frame, set_extras)
from test_memccapable import MEMCCAPABLE, RESULT_LINE


def test_memccapable_binary_all_27_pass(server):
    if not shutil.which("memccapable"):
        pytest.fail("memccapable (libmemcached-tools) is not installed")
    host, port = server
    proc = subprocess.run([MEMCCAPABLE, "-h", host, "-p", str(port), "-b", "-t", "10"],
                          capture_output=True, text=True, timeout=120)
    output = proc.stdout + proc.stderr
    results = {}
    for line in proc.stdout.splitlines():
        m = RESULT_LINE.match(line.replace("binary ", "ascii ", 1))
        if m:
            results[m.group("name")] = m.group("result")
    assert len(results) == 27, output
    assert all(r == "pass" for r in results.values()), output
    assert proc.returncode == 0, output


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

"""Binary-protocol frames for the integration tests: request frames, reading response frames
over a conftest.RawConn, and the differential scripts run against a reference memcached
(test_conformance_diff.py) with the masks of the fields that legitimately differ."""

import struct

from conftest import ConnectionClosed

HEADER = struct.Struct(">BBHBBHIIQ")
GET, SET, ADD, REPLACE, DELETE, INCR, DECR, QUIT, FLUSH, GETQ, NOOP, VERSION, GETK, GETKQ, \
    APPEND, PREPEND, STAT, SETQ, ADDQ, REPLACEQ, DELETEQ, INCRQ, DECRQ, QUITQ, FLUSHQ, APPENDQ, \
    PREPENDQ, VERBOSITY, TOUCH, GAT, GATQ = range(0x1f)
SASL_LIST, SASL_AUTH, GATK, GATKQ = 0x20, 0x21, 0x23, 0x24
END_OPAQUE = 0xFFFFFFFF  # the NOOP that ends each step


def frame(op, key=b"", extras=b"", value=b"", opaque=0, cas=0, magic=0x80, bodylen=None):
    body = extras + key + value
    return HEADER.pack(magic, op, len(key), len(extras), 0, 0,
                       len(body) if bodylen is None else bodylen, opaque, cas) + body


def set_extras(flags=0, exptime=0):
    return struct.pack(">II", flags, exptime)


def incr_extras(delta, initial=0, exptime=0):
    return struct.pack(">QQI", delta, initial, exptime)


def read_frame(conn):
    """(opcode, status, opaque, cas, extras, key, value) of the next response frame."""
    magic, op, keylen, extlen, _, status, bodylen, opaque, cas = HEADER.unpack(conn.read_exact(24))
    assert magic == 0x81
    body = conn.read_exact(bodylen)
    return op, status, opaque, cas, body[:extlen], body[extlen:extlen + keylen], \
        body[extlen + keylen:]


def exchange(conn, data):
    """Sends `data` and a NOOP; the response frames before the NOOP's, as tuples."""
    conn.send(data + frame(NOOP, opaque=END_OPAQUE))
    frames = []
    while True:
        f = read_frame(conn)
        if f[0] == NOOP and f[2] == END_OPAQUE:
            return frames
        frames.append(f)


# --- differential scripts: the same frames to memcached and to the server under test ---------

def masked(frames):
    """Frames as comparable tuples. Masked, because they legitimately differ:
    - the cas of a reply: memcached and pmcached number items alike but not identically after a
      flush or a refused store, and no client can depend on the values, only on their equality;
    - VERSION's text: "1.6.18" vs "1.6.18-pmcached-<version>";
    - stat values (and which stats exist): the servers' figures differ; the frame layout, the
      empty frame that ends the list and the answers to unknown groups are compared."""
    out = []
    for op, status, opaque, cas, extras, key, value in frames:
        if op == VERSION:
            value = b"<version>"
        if op == STAT and status == 0:
            key, value = (b"<stat>", b"<value>") if key else (key, value)
        out.append((op, status, opaque, "cas" if cas else 0, extras, key, value))
    if any(op == STAT for op, *_ in out):  # one <stat> frame however many stats there are
        collapsed = []
        for f in out:
            if not (collapsed and f[0] == STAT and f[5] == b"<stat>" and collapsed[-1] == f):
                collapsed.append(f)
        out = collapsed
    return out


def run_steps(address, steps, connect):
    conn = connect(address)
    replies = []
    for step in steps:
        try:
            replies.append(masked(exchange(conn, step)))
        except (ConnectionClosed, OSError):
            replies.append("<CLOSED>")
            break
    return replies


STEPS = {
    "storage": [frame(FLUSH), frame(SET, b"s", set_extras(5, 0), b"v1", opaque=1),
                frame(ADD, b"s", set_extras(), b"x", opaque=2),
                frame(ADD, b"a", set_extras(1), b"x", opaque=3),
                frame(REPLACE, b"none", set_extras(), b"x", opaque=4),
                frame(REPLACEQ, b"s", set_extras(9), b"r", opaque=5),
                frame(SET, b"s", set_extras(), b"x", cas=1, opaque=6),
                frame(SET, b"none", set_extras(), b"x", cas=1, opaque=7),
                frame(ADD, b"s", set_extras(), b"x", cas=1, opaque=8),
                frame(APPEND, b"none", value=b"x"), frame(PREPENDQ, b"none", value=b"x"),
                frame(APPEND, b"s", value=b">>"), frame(PREPEND, b"s", value=b"<<"),
                frame(APPEND, b"s", value=b"x", cas=1),
                frame(GETK, b"s"), frame(GET, b"a"), frame(GETKQ, b"none"), frame(GETK, b"none"),
                frame(SETQ, b"big", set_extras(), b"b" * (1 << 20)), frame(GET, b"big")],
    "delete_touch_gat": [frame(FLUSH), frame(SET, b"t", set_extras(3), b"v"),
                         frame(DELETE, b"t", cas=1), frame(TOUCH, b"t", struct.pack(">I", 100)),
                         frame(TOUCH, b"none", struct.pack(">I", 100)),
                         frame(GAT, b"t", struct.pack(">I", 0)), frame(GATQ, b"none", b"\0" * 4),
                         frame(GATK, b"t", b"\0" * 4), frame(GATKQ, b"none", b"\0" * 4),
                         frame(GATK, b"none", b"\0" * 4),
                         frame(DELETEQ, b"t"), frame(DELETE, b"t"), frame(GET, b"t")],
    "arithmetic": [frame(FLUSH), frame(INCR, b"n", incr_extras(1, 10, 0xFFFFFFFF)),
                   frame(INCR, b"n", incr_extras(1, 10)), frame(INCR, b"n", incr_extras(5)),
                   frame(DECR, b"n", incr_extras(100)), frame(DECRQ, b"n", incr_extras(1)),
                   frame(INCR, b"n", incr_extras(2 ** 64 - 1)), frame(INCR, b"n", incr_extras(1), cas=1),
                   frame(SET, b"s", set_extras(), b"abc"), frame(INCR, b"s", incr_extras(1)),
                   frame(GET, b"n")],
    "other": [frame(NOOP, opaque=0x12345678), frame(VERSION), frame(FLUSHQ),
              frame(FLUSH, extras=struct.pack(">I", 100)), frame(STAT, b"settings"),
              frame(STAT, b"conns"), frame(STAT, b"bogus"), frame(STAT, b"reset"),
              # memcached drops an unknown opcode's body length counted after its extras: the
              # padding is what it eats.
              frame(VERBOSITY, extras=struct.pack(">I", 1)) + b"\0" * 4, frame(SASL_LIST),
              frame(SASL_AUTH, b"PLAIN", value=b"\0user\0pass"), frame(0x50), frame(QUIT)],
    "malformed": [frame(SET, b"k", set_extras(), b"v"), frame(DELETE, b"k", extras=b"xx")],
    "oversized_key": [frame(GET, b"k" * 251)],
    "key_longer_than_body": [frame(GET, b"abc", bodylen=1) + b"xx"],
    "quitq": [frame(QUITQ)],
}

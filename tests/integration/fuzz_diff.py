#!/usr/bin/python3
"""Seeded differential fuzzer: random command sequences against memcached 1.6.18 and pmcached.

A seed gives a fixed sequence of requests (valid and malformed storage, retrieval and meta
commands with random flags and tokens, incr/decr, touch, flush_all, garbage bytes, NULs,
oversized keys and values, bad lengths), grouped into batches. Each batch is sent to both
servers, whole in one write, in random pieces, or byte by byte, followed by `mn`, and the reply
streams are compared byte for byte after normalising only what legitimately differs: cas values
(mapped per server in order of first appearance), seconds that may tick between two commands
(t, l, me exp/la, within 2), me's cls/size, and the VERSION text. A divergence is run again
on fresh servers: if it recurs it is shrunk to a minimal failing sequence and printed (exit 1),
if not it is reported as unstable (exit 3).

The reference runs without its background LRU threads (`-o no_lru_crawler,no_lru_maintainer`):
they reap flushed and expired items and hold items for a moment while they look at them, so
with them memcached's replies depend on when they ran. Without them its replies depend only on
the bytes it read, apart from the cases below.

memcached's own answer is not always a function of the bytes sent, and the generator keeps
to requests where it is:
- TTLs short enough to expire during a run and absolute future times are not used (the two
  servers' clocks differ by a fraction of a second), nor `stats`, `verbosity`, R tokens near a
  TTL, or ma's T.
- flush_all only flushes at once: memcached's flush is lazy, and a later flush_all that moves
  the flush time brings back every flushed item nothing has reaped yet (pmcached's sweep reaps
  them, memcached's LRU maintainer would).
- incr/decr/ma start a batch: memcached rewrites a number in place (padded with spaces, the
  item's stale and fetched state kept) only while nothing else holds the item, or else makes a
  new item; a reply still queued in the same batch holds it.
- No value is made only of whitespace: incr runs strtoull() on it, which skips that and the
  "\r\n" after it and reads on into whatever memory follows the item.
- `quit`, a request with more than 2048 bytes without a newline (memcached closes as soon as
  one of its reads ends inside such a line) and a retrieval with a key over 250 bytes (it drops
  every reply not yet sent: conn_release_items()) go alone, because what memcached answers
  depends on how its reads split a pipeline. A server that closes with input unread resets the
  connection, which may destroy replies in flight; so when either side was reset, the shorter
  reply need only begin the longer.

By hand, e.g.:
  python3 tests/integration/fuzz_diff.py --seed 7 --commands 100000 --engine wort
  python3 tests/integration/fuzz_diff.py --seed 7 --server "/usr/bin/memcached -U 0"
The bounded run inside the test suite is test_conformance_diff.py::test_seeded_fuzz.
"""

import argparse
import base64
import os
import pathlib
import random
import re
import socket
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from conftest import ServerProcess  # noqa: E402  (the same server handling as the tests)

DEFAULT_REFERENCE = "/usr/bin/memcached -U 0"
REFERENCE_FLAGS = "-o no_lru_crawler,no_lru_maintainer"  # see the module comment
DEFAULT_SERVER = str(HERE.parents[1] / "build" / "server" / "pmcached")
BATCH_DEADLINE_S = 5.0
STORAGE = {b"set", b"add", b"replace", b"append", b"prepend", b"cas"}
CAS_MARK = re.compile(rb"\{\{CAS(\+)?:([^}]*)\}\}")


# ---------------------------------------------------------------------------------------------
# The generator

class Generator:
    """Random requests. Each unit is the bytes of one request (a command line and whatever data
    the servers will read for it); a request may name a cas as {{CAS:key}} (the last cas the
    server showed, for that key if known) or {{CAS+:key}} (that plus one), filled in per server."""

    def __init__(self, rng):
        self.r = rng
        self.keys = [b"k%d" % i for i in range(6)] + [b"n0", b"n1", b"n2"]

    def pick(self, *weighted):
        total = sum(w for w, _ in weighted)
        x = self.r.uniform(0, total)
        for w, v in weighted:
            x -= w
            if x <= 0:
                return v() if callable(v) else v
        return weighted[-1][1]

    def key(self):
        r = self.r.random()
        if r < 0.93:
            return self.r.choice(self.keys)
        if r < 0.96:
            return b"K" * 250
        if r < 0.98:
            return b"K" * 251
        return self.r.choice([b"k\x01", b"k\xff\xfe", b"k\t1", b"\x7f"])

    def exptime(self):
        return self.r.choice([b"0", b"0", b"0", b"-1", b"3600", b"86400", b"1000000000",
                              b"2592001", b"abc", b"", b"+3600", b"99999999999999999999"])

    def client_flags(self):
        return self.r.choice([b"0", b"0", b"0", b"1", b"4294967295", b"4294967296", b"-1",
                              b"abc", b"77"])

    def data(self, key):
        r = self.r.random()
        if key.startswith(b"n") and r < 0.7:
            return self.r.choice([b"0", b"9", b"10", b"99", b"18446744073709551615", b" 5",
                                  b"5 ", b"-1", b"abc", b"", b"007", b"18446744073709551616"])
        if r < 0.85:
            n = self.r.randint(0, 12)
        elif r < 0.97:
            n = self.r.randint(13, 3000)
        elif r < 0.995:
            return b"\r\n" * self.r.randint(1, 3) + b"x"
        else:
            # around the largest item for a short key (1048516 bytes with flags 0)
            n = self.r.choice([1048510, 1048516, 1048517, 1048600, 1200000])
        alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789 \t\r\n\x00"
        out = bytes(self.r.choice(alphabet) for _ in range(min(n, 64))) * (n // 64 + 1) \
            if n > 64 else bytes(self.r.choice(alphabet) for _ in range(n))
        if out and not out.strip(b" \t\r\n"):
            out = b"x" + out[1:]  # no value of only whitespace: see the module comment
        return out

    def with_data(self, line_head, data, tail=b""):
        """`line_head` + declared length (+ tail) + data; the declared length is sometimes off,
        and what follows always covers what the server reads, so no server waits for bytes."""
        declared = len(data)
        r = self.r.random()
        if r < 0.06:
            declared += self.r.choice([-3, -1, 1, 2, 5])
        length_token = b"%d" % declared
        if r > 0.98:
            length_token = self.r.choice([b"-1", b"abc", b"4294967297", b"2147483648", b"",
                                          b"-2147483648", b" 1"])
        line = line_head + b" " + length_token + tail + b"\r\n"
        payload = data + b"\r\n"
        need = effective_length(line)
        if need is not None and need + 2 > len(payload):
            payload += b"f" * (need + 2 - len(payload)) + b"\r\n"
        return line + payload

    # --- classic ---

    def storage(self):
        cmd = self.r.choice([b"set", b"set", b"set", b"add", b"replace", b"append", b"prepend",
                             b"cas"])
        key = self.key()
        head = b"%s %s %s %s" % (cmd, key, self.client_flags(), self.exptime())
        tail = b""
        if cmd == b"cas":
            tail = b" " + self.r.choice([b"{{CAS:%s}}" % key, b"{{CAS:%s}}" % key,
                                         b"{{CAS+:%s}}" % key, b"0", b"abc"])
        if self.r.random() < 0.1:
            tail += self.r.choice([b" noreply", b" noreply", b" bogus", b" noreply x"])
        return self.with_data(head, self.data(key), tail)

    def retrieval(self):
        cmd = self.r.choice([b"get", b"get", b"gets", b"gat", b"gats"])
        keys = b" ".join(self.key() for _ in range(self.r.choice([0, 1, 1, 1, 2, 3])))
        if cmd in (b"gat", b"gats"):
            return b"%s %s %s\r\n" % (cmd, self.exptime(), keys)
        return b"%s %s\r\n" % (cmd, keys) if keys else cmd + b"\r\n"

    def other(self):
        key = self.key()
        return self.pick(
            (3, lambda: b"delete %s%s\r\n" % (key, self.r.choice(
                [b"", b"", b" noreply", b" 0", b" 1", b" 0 noreply", b" x y"]))),
            (3, lambda: b"%s %s %s%s\r\n" % (
                self.r.choice([b"incr", b"decr"]), self.r.choice(self.keys[-3:] + [key]),
                self.r.choice([b"1", b"5", b"0", b"1000", b"18446744073709551615",
                               b"18446744073709551616", b"-1", b"abc"]),
                self.r.choice([b"", b"", b" noreply"]))),
            (2, lambda: b"touch %s %s%s\r\n" % (key, self.exptime(),
                                                 self.r.choice([b"", b"", b" noreply"]))),
            # Only immediate flushes: see the module comment on delayed ones.
            (0.4, lambda: b"flush_all%s\r\n" % self.r.choice(
                [b"", b" 0", b" -1", b" abc", b" noreply", b" 0 noreply", b" 0 2"])),
            (0.3, b"version\r\n"),
            (0.2, b"shutdown\r\n"),
        )

    # --- meta ---

    def meta_key(self, flags):
        key = self.key()
        if b"b" in flags and self.r.random() < 0.8:
            return base64.b64encode(key)
        return key

    def ttl_token(self):
        return self.r.choice([b"0", b"-1", b"3600", b"86400", b"abc", b"", b"1000000000"])

    def cas_token(self, key):
        return self.r.choice([b"{{CAS:%s}}" % key, b"{{CAS+:%s}}" % key, b"0", b"abc"])

    def flag_set(self, choices, key):
        chosen = self.r.sample(choices, self.r.randint(0, min(5, len(choices))))
        out = []
        for f in chosen:
            token = f() if callable(f) else f
            out.append(token)
        if self.r.random() < 0.05:
            out.append(self.r.choice(out) if out else b"v")  # a duplicate
        if self.r.random() < 0.05:
            out.append(self.r.choice([b"x", b"E5", b"Z", b"zz", b"\x01", b"O" + b"o" * 32]))
        self.r.shuffle(out)
        return out

    def mg(self):
        key = self.key()
        flags = self.flag_set([b"v", b"k", b"c", b"f", b"s", b"t", b"h", b"l", b"q", b"u",
                               lambda: b"O" + self.r.choice([b"1", b"abc", b"x" * 31]),
                               lambda: b"T" + self.ttl_token(),
                               lambda: b"N" + self.ttl_token(),
                               lambda: b"R" + self.r.choice([b"30", b"200000", b"x"]),
                               b"b"], key)
        k = base64.b64encode(key) if b"b" in flags and self.r.random() < 0.8 else key
        return b"mg %s%s\r\n" % (k, b"".join(b" " + f for f in flags))

    def ms(self):
        key = self.key()
        flags = self.flag_set([b"c", b"k", b"q", b"s", b"t", b"f", b"I", b"b",
                               lambda: b"O" + self.r.choice([b"1", b"abc"]),
                               lambda: b"F" + self.client_flags(),
                               lambda: b"T" + self.ttl_token(),
                               lambda: b"C" + self.cas_token(key),
                               lambda: b"M" + self.r.choice([b"E", b"A", b"P", b"R", b"S", b"s",
                                                             b"X", b"", b"EE"]),
                               lambda: b"N" + self.ttl_token()], key)
        k = base64.b64encode(key) if b"b" in flags and self.r.random() < 0.8 else key
        return self.with_data(b"ms %s" % k, self.data(key),
                              b"".join(b" " + f for f in flags))

    def md(self):
        key = self.key()
        flags = self.flag_set([b"q", b"k", b"I", b"b",
                               lambda: b"O" + self.r.choice([b"1", b"abc"]),
                               lambda: b"C" + self.cas_token(key),
                               lambda: b"T" + self.ttl_token()], key)
        k = base64.b64encode(key) if b"b" in flags and self.r.random() < 0.8 else key
        return b"md %s%s\r\n" % (k, b"".join(b" " + f for f in flags))

    def ma(self):
        key = self.r.choice(self.keys[-3:] + [self.key()])
        flags = self.flag_set([b"q", b"k", b"v", b"t", b"c", b"b",
                               lambda: b"O" + self.r.choice([b"1", b"abc"]),
                               lambda: b"C" + self.cas_token(key),
                               lambda: b"N" + self.ttl_token(),
                               lambda: b"J" + self.r.choice([b"0", b"13", b"x",
                                                             b"18446744073709551615"]),
                               lambda: b"D" + self.r.choice([b"1", b"7", b"x", b"0"]),
                               lambda: b"M" + self.r.choice([b"I", b"+", b"D", b"-", b"X",
                                                             b"i"])], key)
        k = base64.b64encode(key) if b"b" in flags and self.r.random() < 0.8 else key
        return b"ma %s%s\r\n" % (k, b"".join(b" " + f for f in flags))

    def garbage(self):
        return self.pick(
            (3, lambda: bytes(self.r.choice(b"abcxyz09 \t\r\x00\x01\xff") for _ in
                              range(self.r.randint(0, 40))) + b"\r\n"),
            (1, lambda: self.r.choice([b"\r\n", b"\n", b"   \r\n", b"mn\r\n", b"me k0\r\n",
                                       b"SET k 0 0 1\r\n", b"get\r\n", b"gets\r\n",
                                       b"mg\r\n", b"ms k0\r\n", b"ms\r\n", b"md\r\n",
                                       b"ma\r\n", b"incr\r\n", b"touch k0\r\n"])),
            (1, lambda: b"get " + b"miss " * self.r.randint(300, 700) + b"k0\r\n"),
            (1, lambda: self.r.choice([b"get k0\x00 k1\r\n", b"delete k0\x00x\r\n",
                                       b"mg k0\x00 v\r\n", b"\x00\r\n"])),
        )

    def unit(self):
        return self.pick((22, self.storage), (16, self.retrieval), (12, self.other),
                         (12, self.mg), (12, self.ms), (6, self.md), (8, self.ma),
                         (4, self.garbage))

    def batches(self, commands):
        """[(mode, [unit, ...]), ...] with `commands` units in all."""
        out = []
        left = commands
        while left > 0:
            r = self.r.random()
            if r < 0.004:
                # alone: the server closes the connection (quit, a line too long)
                out.append(("whole", [self.r.choice([b"quit\r\n", b"z" * 20000])]))
                left -= 1
                continue
            n = min(left, self.r.choice([1, 1, 2, 3, 5, 8, 13, 20]))
            units = [self.unit() for _ in range(n)]
            left -= n
            # Requests after which memcached drops replies not yet sent: what it drops depends
            # on its reads, so they go alone (see the module comment).
            lonely = [u for u in units if culls_replies(u) or has_line_too_long(u)]
            units = [u for u in units if u not in lonely]
            out += [("whole", [u]) for u in lonely]
            for group in split_before_arithmetic(units):
                size = sum(len(u) for u in group)
                mode = self.r.choice(["whole", "whole", "pieces", "bytes"])
                if mode == "bytes" and size > 1500:
                    mode = "pieces"
                out.append((mode, group))
        return out


def is_mn(line):
    """Whether a request line is an mn (memcached reads up to a NUL and splits on spaces)."""
    tokens = [t for t in line.split(b"\x00", 1)[0].rstrip(b"\r").split(b" ") if t]
    return bool(tokens) and tokens[0] == b"mn"


def is_arithmetic(unit):
    return unit.split(b" ", 1)[0].split(b"\r", 1)[0] in (b"incr", b"decr", b"ma")


def split_before_arithmetic(units):
    """`units` cut so that every incr/decr/ma starts a group (see the module comment)."""
    groups = []
    for u in units:
        if not groups or is_arithmetic(u):
            groups.append([])
        groups[-1].append(u)
    return groups


def has_line_too_long(unit):
    """More than 2048 bytes without a newline anywhere: a line too long, or a data block that
    becomes one when its storage line is refused without the block being read."""
    return any(len(part) > 2048 for part in unit.split(b"\n"))


def culls_replies(unit):
    """A get/gets/gat/gats with a key over 250 bytes: memcached answers it with an error and
    drops the replies still unsent on the connection."""
    line = unit.split(b"\n", 1)[0].split(b"\x00", 1)[0]
    tokens = [t for t in line.rstrip(b"\r").split(b" ") if t]
    return bool(tokens) and tokens[0] in (b"get", b"gets", b"gat", b"gats", b"bget") and \
        any(len(t) > 250 for t in tokens[1:])


def effective_length(line):
    """The data length a server reads after `line` (memcached's rules), or None if none."""
    line = line.split(b"\n", 1)[0]
    if line.endswith(b"\r") and len(line) > 1:
        line = line[:-1]
    line = line.split(b"\x00", 1)[0]
    tokens = [t for t in line.split(b" ") if t][:24]
    if not tokens:
        return None
    if tokens[0] == b"ms":
        index = 2
        if len(tokens) < 3 or len(tokens[1]) > 250 or len(tokens) + 1 > 20:
            return None
    elif tokens[0] in STORAGE:
        want = 6 if tokens[0] == b"cas" else 5
        if len(tokens) not in (want, want + 1) or len(tokens[1]) > 250:
            return None
        index = 4
    else:
        return None
    m = re.fullmatch(rb"[ \t\n\v\f\r]*([+-]?)(\d+)[ \t\n\v\f\r]?.*", tokens[index], re.S)
    if not m:
        return None
    value = int(m.group(2))
    if value > (1 << 63) - (0 if m.group(1) == b"-" else 1):
        return None
    if m.group(1) == b"-":
        value = -value
    value = ((value + (1 << 31)) % (1 << 32)) - (1 << 31)  # int32 truncation
    if value < 0 or value > 0x7fffffff - 2:
        return None
    return value


# ---------------------------------------------------------------------------------------------
# Running a sequence on one server

class Client:
    """One server's side of a run: its connection and the cas values it has shown."""

    def __init__(self, address):
        self.address = address
        self.sock = None
        self.cas_by_key = {}
        self.last_cas = 1

    def connect(self):
        self.sock = socket.create_connection(self.address, timeout=BATCH_DEADLINE_S)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def fill(self, unit):
        def cas(m):
            value = self.cas_by_key.get(m.group(2), self.last_cas)
            return b"%d" % (value + (1 if m.group(1) else 0))
        return CAS_MARK.sub(cas, unit)

    def run_batch(self, mode, units, rng):
        if self.sock is None:
            self.connect()
        data = b"".join(self.fill(u) for u in units) + b"mn\r\n"
        # MN replies to wait for: ours, and any line inside whose command is mn, arguments or
        # not (a guess that data blocks can fool into counting too many; a wrong guess then
        # costs a timeout on both servers, not a false divergence). Counting too few would
        # stop reading at the first MN: memcached answers in chunks of 20 commands.
        mns = sum(1 for line in data.split(b"\n") if is_mn(line))
        reset = b"<RESET>"  # how a close shows if the server left part of the batch unread
        closed = b"<CLOSED>"
        try:
            if mode == "whole":
                self.sock.sendall(data)
            else:
                i = 0
                while i < len(data):
                    n = 1 if mode == "bytes" else rng.randint(1, 200)
                    self.sock.sendall(data[i:i + n])
                    i += n
        except OSError:
            closed = reset  # the server closed before it read all we sent
        reply = b""
        deadline = time.monotonic() + BATCH_DEADLINE_S
        while True:
            if reply.endswith(b"MN\r\n") and reply.count(b"MN\r\n") >= mns:
                break
            try:
                self.sock.settimeout(max(0.01, deadline - time.monotonic()))
                chunk = self.sock.recv(1 << 20)
            except socket.timeout:
                reply += b"<TIMEOUT>"
                break
            except ConnectionResetError:
                reply += reset
                self.sock.close()
                self.sock = None
                break
            except OSError:
                chunk = b""
            if not chunk:
                reply += closed
                self.sock.close()
                self.sock = None
                break
            reply += chunk
        self.learn_cas(reply)
        return reply

    def learn_cas(self, reply):
        for m in re.finditer(rb"^VALUE (\S+) \d+ \d+ (\d+)\r$", reply, re.M):
            self.cas_by_key[m.group(1)] = int(m.group(2))
            self.last_cas = int(m.group(2))
        for m in re.finditer(rb"^(?:HD|VA|EN|NF|NS|EX)\b[^\r\n]* c(\d+)", reply, re.M):
            if int(m.group(1)):
                self.last_cas = int(m.group(1))

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None


class Normaliser:
    """Per server: cas values become #1, #2, ... in order of appearance; clock-dependent
    numbers are pulled out to be compared within a tolerance."""

    def __init__(self):
        self.cas = {}

    def cas_id(self, value):
        if value == b"0":
            return b"0"
        return b"#%d" % self.cas.setdefault(value, len(self.cas) + 1)

    def __call__(self, reply):
        out = []
        clocks = []
        i = 0
        while i < len(reply):
            end = reply.find(b"\n", i)
            if end < 0:
                out.append(reply[i:])
                break
            line = reply[i:end + 1]
            i = end + 1
            m = re.match(rb"VALUE (\S+) (\d+) (\d+)( \d+)?\r\n$", line)
            if m:
                n = int(m.group(3))
                cas = b" " + self.cas_id(m.group(4)[1:]) if m.group(4) else b""
                out.append(b"VALUE %s %s %s%s\r\n" % (m.group(1), m.group(2), m.group(3), cas))
                out.append(reply[i:i + n + 2])
                i += n + 2
                continue
            m = re.match(rb"(HD|VA|EN|NF|NS|EX)\b", line)
            if m:
                head = line
                if head.startswith(b"VA "):
                    n = int(re.match(rb"VA (\d+)", head).group(1))
                def token(t):
                    text = t.group(0)
                    if text.startswith(b" c"):
                        return b" c" + self.cas_id(text[2:])
                    if text != b" t-1":
                        clocks.append(int(text[2:]))
                        return text[:2] + b"<n>"
                    return text
                out.append(re.sub(rb" (?:c\d+|t-?\d+|l\d+)(?=[ \r])", token, head))
                if head.startswith(b"VA "):
                    out.append(reply[i:i + n + 2])
                    i += n + 2
                continue
            m = re.match(rb"ME (\S+) exp=(-?\d+) la=(\d+) cas=(\d+) (\S+) cls=\d+ size=\d+\r\n$",
                         line)
            if m:
                if m.group(2) != b"-1":
                    clocks.append(int(m.group(2)))
                clocks.append(int(m.group(3)))
                out.append(b"ME %s exp=%s la=<n> cas=%s %s\r\n" % (
                    m.group(1), b"-1" if m.group(2) == b"-1" else b"<n>",
                    self.cas_id(m.group(4)), m.group(5)))
                continue
            if line.startswith(b"VERSION "):
                out.append(b"VERSION <v>\r\n")
                continue
            out.append(line)
        return b"".join(out), clocks


def same(want, got):
    (w, wc), (g, gc) = want, got
    if (w.endswith(b"<RESET>") or g.endswith(b"<RESET>")) and \
            w.endswith((b"<RESET>", b"<CLOSED>")) and g.endswith((b"<RESET>", b"<CLOSED>")):
        # A server that closes with input unread sends a reset, and a reset may destroy the
        # replies still in flight to the client: the shorter reply must begin the longer.
        w, g = w[:w.rindex(b"<")], g[:g.rindex(b"<")]
        return w.startswith(g) or g.startswith(w)
    return w == g and len(wc) == len(gc) and all(abs(a - b) <= 2 for a, b in zip(wc, gc))


def run_sequence(batches, addresses, seed, stop_at_first=True):
    """Runs `batches` on both servers; returns the index of the first diverging batch (or None)
    and the two normalised replies there."""
    rngs = [random.Random(seed ^ 0x5eed), random.Random(seed ^ 0x5eed)]
    clients = [Client(a) for a in addresses]
    norms = [Normaliser(), Normaliser()]
    try:
        for index, (mode, units) in enumerate(batches):
            # Both at once: a batch that ends waiting for a timeout takes seconds, and the item
            # times that mg l/t and me show must have aged the same on both servers.
            replies, errors = [None, None], []

            def run(i, mode=mode, units=units):
                try:
                    replies[i] = clients[i].run_batch(mode, units, rngs[i])
                except BaseException as e:  # raised again below, in the caller's thread
                    errors.append(e)

            threads = [threading.Thread(target=run, args=(i,)) for i in (0, 1)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if errors:
                raise errors[0]
            results = [n(r) for n, r in zip(norms, replies)]
            if not same(results[0], results[1]):
                return index, [text for text, _ in results]  # normalised: cas values as #n
        return None, None
    finally:
        for c in clients:
            c.close()


# ---------------------------------------------------------------------------------------------
# Shrinking a divergence

def shrink(batches, start_servers, seed, budget_s=120.0):
    """Greedily drops batches, then units, while the divergence stays; fresh servers per try."""
    deadline = time.monotonic() + budget_s

    def fails(candidate):
        servers = start_servers()
        try:
            index, _ = run_sequence(candidate, [s.address for s in servers], seed)
            return index is not None
        finally:
            for s in servers:
                s.stop()

    current = list(batches)
    chunk = max(1, len(current) // 2)
    while chunk >= 1 and time.monotonic() < deadline:
        i = 0
        while i < len(current) - 1 and time.monotonic() < deadline:
            candidate = current[:i] + current[i + chunk:]
            if candidate and fails(candidate):
                current = candidate
            else:
                i += chunk
        chunk //= 2
    # then single units inside the remaining batches
    b = 0
    while b < len(current) and time.monotonic() < deadline:
        mode, units = current[b]
        u = 0
        while len(units) > 1 and u < len(units) and time.monotonic() < deadline:
            candidate = current[:b] + [(mode, units[:u] + units[u + 1:])] + current[b + 1:]
            if fails(candidate):
                current = candidate
                units = current[b][1]
            else:
                u += 1
        b += 1
    return current


def describe(batches, replies=None):
    lines = []
    for mode, units in batches:
        lines.append(f"  [{mode}] " + " ".join(repr(u[:200]) + ("..." if len(u) > 200 else "")
                                               for u in units))
    if replies:
        # from a little before the first byte that differs
        at = next((i for i, (a, b) in enumerate(zip(*replies)) if a != b),
                  min(len(replies[0]), len(replies[1])))
        start = max(0, at - 200)
        lines.append(f"  replies differ at byte {at}; from byte {start}:")
        lines.append(f"  memcached: {replies[0][start:start + 600]!r}")
        lines.append(f"  server:    {replies[1][start:start + 600]!r}")
    return "\n".join(lines)


SAME, DIVERGED, UNSTABLE = "same", "diverged", "unstable"


def run_on_fresh_servers(batches, start_servers, seed):
    servers = start_servers()
    try:
        return run_sequence(batches, [s.address for s in servers], seed)
    finally:
        for s in servers:
            s.stop()


def fuzz(seed, commands, start_servers, shrink_budget_s=120.0):
    """Runs `commands` random units from `seed` on servers from start_servers() (a pair:
    reference, under test). Returns (verdict, report): SAME (report None); DIVERGED, with the
    divergence shrunk; or UNSTABLE, a divergence that the same sequence on fresh servers did
    not repeat (timing decided a reply; worth a look, but not a fault of the bytes sent)."""
    batches = Generator(random.Random(seed)).batches(commands)
    index, replies = run_on_fresh_servers(batches, start_servers, seed)
    if index is None:
        return SAME, None
    report = [f"seed {seed}: replies differ at batch {index} of {len(batches)}:",
              describe(batches[index:index + 1], replies)]
    again, _ = run_on_fresh_servers(batches[:index + 1], start_servers, seed)
    if again != index:
        report.append("the same sequence on fresh servers did not diverge there (timing)")
        return UNSTABLE, "\n".join(report)
    minimal = shrink(batches[:index + 1], start_servers, seed, shrink_budget_s)
    min_index, min_replies = run_on_fresh_servers(minimal, start_servers, seed)
    if min_index is None:
        report += ["the divergence did not recur on fresh servers (timing?); last sequence tried:",
                   describe(minimal)]
    else:
        report += ["minimal failing sequence (run on fresh servers), diverging in its batch "
                   f"{min_index}:", describe(minimal, min_replies)]
    return DIVERGED, "\n".join(report)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--commands", type=int, default=2000)
    parser.add_argument("--engine", default="dram")
    parser.add_argument("--server", default=None,
                        help=f"server under test (default: {DEFAULT_SERVER} --engine ENGINE)")
    parser.add_argument("--reference", default=DEFAULT_REFERENCE)
    parser.add_argument("--shrink-seconds", type=float, default=300.0)
    args = parser.parse_args()
    server = args.server or f"{DEFAULT_SERVER} --engine {args.engine}"
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="fuzz_diff."))
    counter = [0]

    def start_servers():
        for pool in workdir.glob("*.pool"):  # of servers already stopped
            pool.unlink()
        started = []
        for command in (f"{args.reference} {REFERENCE_FLAGS}", server):
            counter[0] += 1
            started.append(ServerProcess(command, [], workdir / f"server-{counter[0]}.log").start())
        return started

    began = time.monotonic()
    verdict, report = fuzz(args.seed, args.commands, start_servers, args.shrink_seconds)
    took = time.monotonic() - began
    if verdict == SAME:
        print(f"seed {args.seed}: {args.commands} commands, same replies ({took:.1f}s)")
        for p in workdir.glob("*.pool"):
            p.unlink()
        return 0
    print(report)
    print(f"server logs in {workdir}")
    return 1 if verdict == DIVERGED else 3


if __name__ == "__main__":
    sys.exit(main())

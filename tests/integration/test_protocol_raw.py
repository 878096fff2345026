"""Raw-socket protocol tests: exact reply bytes, as memcached 1.6.18 gives them.

Most requests go through RawConn.request(), which appends `mn` and returns every byte before the
final `MN\r\n`, so a test sees exactly what the server sent and nothing can hide in the stream.
Every server here is fresh, so cas values are deterministic (the first stored item gets cas 1).
"""

import random
import re

K251 = b"k" * 251


# --- error replies --------------------------------------------------------------------------

def test_unknown_command_is_error(server, connect):
    c = connect(server)
    assert c.request(b"foo\r\n") == b"ERROR\r\n"
    assert c.request(b"SET k 0 0 1\r\n") == b"ERROR\r\n"  # commands are case-sensitive
    assert c.request(b"\r\n") == b"ERROR\r\n"
    assert c.request(b"set\r\nget\r\nincr k\r\n") == b"ERROR\r\n" * 3  # too few tokens


def test_key_of_251_bytes_is_bad_command_line_format(server, connect):
    c = connect(server)
    # The line is rejected and its data block is NOT swallowed: "a" is then an unknown command.
    assert c.request(b"set " + K251 + b" 0 0 1\r\na\r\n") == \
        b"CLIENT_ERROR bad command line format\r\nERROR\r\n"
    assert c.request(b"get " + K251 + b"\r\n") == b"CLIENT_ERROR bad command line format\r\n"
    assert c.request(b"set " + b"k" * 250 + b" 0 0 1\r\na\r\n") == b"STORED\r\n"
    assert c.request(b"get " + b"k" * 250 + b"\r\n") == \
        b"VALUE " + b"k" * 250 + b" 0 1\r\na\r\nEND\r\n"


def test_negative_length_is_bad_command_line_format(server, connect):
    c = connect(server)
    assert c.request(b"set k 0 0 -1\r\n") == b"CLIENT_ERROR bad command line format\r\n"
    assert c.request(b"set k abc 0 1\r\nx\r\n") == \
        b"CLIENT_ERROR bad command line format\r\nERROR\r\n"
    assert c.request(b"get k\r\n") == b"END\r\n"


def test_bad_data_chunk_stores_nothing(server, connect):
    c = connect(server)
    # 1 byte declared, "ab" sent: the 3 bytes "ab\r" are taken as the block and rejected; the
    # leftover "\n" is an empty command line.
    assert c.request(b"set k 0 0 1\r\nab\r\n") == b"CLIENT_ERROR bad data chunk\r\nERROR\r\n"
    assert c.request(b"get k\r\n") == b"END\r\n"
    assert c.request(b"set k 0 0 1\r\nb\r\nget k\r\n") == b"STORED\r\nVALUE k 0 1\r\nb\r\nEND\r\n"


def test_object_too_large_swallows_data_and_answers_next(server, connect):
    c = connect(server)
    big = b"x" * (2 * 1024 * 1024)  # over the default 1 MiB item size limit
    assert c.request(b"set big 0 0 %d\r\n" % len(big) + big + b"\r\nget big\r\n") == \
        b"SERVER_ERROR object too large for cache\r\nEND\r\n"
    assert c.request(b"set small 0 0 2\r\nok\r\nget small\r\n") == \
        b"STORED\r\nVALUE small 0 2\r\nok\r\nEND\r\n"


def test_item_size_limit_flag(server_factory, connect):
    # memcached refuses -I below its 512k slab chunk size (or not a multiple of it): raise it.
    s = server_factory("-I", "2m")
    c = connect(s.address)
    fits = b"v" * (1536 * 1024)  # too large for the default 1m, fits in 2m
    assert c.request(b"set k 0 0 %d\r\n" % len(fits) + fits + b"\r\n") == b"STORED\r\n"
    assert c.request(b"get k\r\n") == b"VALUE k 0 %d\r\n" % len(fits) + fits + b"\r\nEND\r\n"
    big = b"v" * (3 * 1024 * 1024)
    assert c.request(b"set k 0 0 %d\r\n" % len(big) + big + b"\r\n") == \
        b"SERVER_ERROR object too large for cache\r\n"


def test_incr_errors(server, connect):
    c = connect(server)
    assert c.request(b"incr nope 1\r\n") == b"NOT_FOUND\r\n"
    assert c.request(b"set k 0 0 3\r\nabc\r\n") == b"STORED\r\n"
    assert c.request(b"incr k 1\r\n") == \
        b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
    for delta in (b"abc", b"-1", b"18446744073709551616", b"1.5"):
        assert c.request(b"incr k " + delta + b"\r\n") == \
            b"CLIENT_ERROR invalid numeric delta argument\r\n", delta
    assert c.request(b"decr k x\r\n") == b"CLIENT_ERROR invalid numeric delta argument\r\n"


def test_incr_edges(server, connect):
    c = connect(server)
    assert c.request(b"set n 0 0 20\r\n18446744073709551614\r\n") == b"STORED\r\n"
    assert c.request(b"incr n 1\r\n") == b"18446744073709551615\r\n"
    assert c.request(b"incr n 1\r\n") == b"0\r\n"  # wraps at 2^64
    assert c.request(b"set n 0 0 2\r\n10\r\n") == b"STORED\r\n"
    assert c.request(b"decr n 1\r\n") == b"9\r\n"
    # decr keeps the old length and pads with spaces
    assert c.request(b"get n\r\n") == b"VALUE n 0 2\r\n9 \r\nEND\r\n"
    assert c.request(b"decr n 100\r\n") == b"0\r\n"  # decr stops at 0


def test_delete_usage_error(server, connect):
    c = connect(server)
    assert c.request(b"delete a 1\r\n") == \
        b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n"
    assert c.request(b"delete a 0\r\n") == b"NOT_FOUND\r\n"


# --- pipelining and fragmentation -----------------------------------------------------------

def test_pipeline_of_100_mixed_commands(server, connect):
    c = connect(server)
    request, expected = [], []
    counter = 0
    request.append(b"set ctr 0 0 1\r\n0\r\n")
    expected.append(b"STORED\r\n")
    for i in range(20):
        key = b"pk%d" % i
        value = b"value-%d" % i
        counter += i
        request += [b"set %s %d 0 %d\r\n%s\r\n" % (key, i, len(value), value),
                    b"get %s\r\n" % key,
                    b"incr ctr %d\r\n" % i,
                    b"append %s 0 0 1 noreply\r\n!\r\n" % key,
                    b"mg %s v f\r\n" % key]
        expected += [b"STORED\r\n",
                     b"VALUE %s %d %d\r\n%s\r\nEND\r\n" % (key, i, len(value), value),
                     b"%d\r\n" % counter,
                     b"",
                     b"VA %d f%d\r\n%s!\r\n" % (len(value) + 1, i, value)]
    request.append(b"delete pk0\r\nget pk0 pk1\r\n")
    expected.append(b"DELETED\r\nVALUE pk1 1 8\r\nvalue-1!\r\nEND\r\n")
    assert len(request) >= 100
    c.send(b"".join(request) + b"mn\r\n")
    assert c.read_until(b"MN\r\n") == b"".join(expected) + b"MN\r\n"


def test_sets_of_many_connections_at_once_keep_each_connections_order(server, connect):
    """Twenty connections pipeline sets at the same time (a persistent engine stores the sets of
    one turn of a worker together: server/set_batch.h). Each gets its replies in its own order,
    a get after its own set sees that set, a noreply set is there for the get after it, and a key
    all of them set holds one of their values."""
    conns = [connect(server) for _ in range(20)]
    for rnd in range(10):
        for n, c in enumerate(conns):
            own = b"own%d-%d" % (n, rnd)
            c.send(b"set %s %d 0 %d\r\n%s\r\nget %s\r\n" % (own, n, len(own), own, own) +
                   b"set shared 0 0 %d\r\n%s\r\n" % (len(own), own) +
                   b"set quiet%d 0 0 1 noreply\r\n%d\r\nget quiet%d\r\n" % (n, rnd, n))
        for n, c in enumerate(conns):
            own = b"own%d-%d" % (n, rnd)
            c.expect(b"STORED\r\nVALUE %s %d %d\r\n%s\r\nEND\r\n" % (own, n, len(own), own) +
                     b"STORED\r\nVALUE quiet%d 0 1\r\n%d\r\nEND\r\n" % (n, rnd))
    shared = conns[0].request(b"get shared\r\n")
    assert shared.startswith(b"VALUE shared 0 ") and shared.split(b"\r\n")[1].startswith(b"own")
    for n, c in enumerate(conns):
        own = b"own%d-9" % n
        assert c.request(b"get %s\r\n" % own) == \
            b"VALUE %s %d %d\r\n%s\r\nEND\r\n" % (own, n, len(own), own)


def test_sets_behind_replies_past_the_output_high_water_mark(server, connect):
    """Over 1 MiB of replies holds parsing back until the socket drains, with the rest of the
    pipeline unparsed; a set parsed when it drains may then wait for the group commit while a
    read is already queued (server/connection.cc, start_read). Each set must store the bytes
    that were sent and answer in order."""
    c = connect(server)
    big = b"b" * 400_000
    assert c.request(b"set big 0 0 %d\r\n%s\r\n" % (len(big), big)) == b"STORED\r\n"
    hit = b"VALUE big 0 %d\r\n%s\r\nEND\r\n" % (len(big), big)
    for rnd in range(8):
        value = bytes([97 + rnd]) * 50_000
        c.send(b"get big\r\n" * 3 +
               b"set k%d 0 0 %d\r\n%s\r\nget k%d\r\n" % (rnd, len(value), value, rnd))
        c.expect(hit * 3 + b"STORED\r\nVALUE k%d 0 %d\r\n%s\r\nEND\r\n" % (rnd, len(value), value))


def test_a_pipeline_of_sets_answers_in_order_with_what_comes_between_them(server, connect):
    """One connection's run of sets waits for the group commit together, up to 64 of them
    (server/connection.h): the command after the run, whatever it is, waits for them, and every
    reply keeps its command's place. 150 sets here: more than one run; keys set twice keep the
    later value, noreply sets answer nothing, and an oversized set, a bad line and a get of keys
    set just before answer between them."""
    c = connect(server)
    big = b"x" * (2 * 1024 * 1024)
    request, expected, final = [], [], {}
    for i in range(150):
        key = b"p%d" % (i % 100)  # the last 50 set keys of the first 50 again
        value = b"v%d" % i
        noreply = i % 7 == 3
        request.append(b"set %s %d 0 %d%s\r\n%s\r\n" %
                       (key, i, len(value), b" noreply" if noreply else b"", value))
        expected.append(b"" if noreply else b"STORED\r\n")
        final[key] = (i, value)
        if i == 70:
            request.append(b"set big 0 0 %d\r\n%s\r\n" % (len(big), big))
            expected.append(b"SERVER_ERROR object too large for cache\r\n")
        if i == 90:
            request.append(b"bogus\r\n")
            expected.append(b"ERROR\r\n")
        if i in (30, 120):  # this set's key and the one before
            keys = (b"p%d" % (i % 100), b"p%d" % ((i - 1) % 100))
            request.append(b"get %s %s\r\n" % keys)
            expected.append(b"".join(b"VALUE %s %d %d\r\n%s\r\n" %
                                     (k, final[k][0], len(final[k][1]), final[k][1])
                                     for k in keys) + b"END\r\n")
    c.send(b"".join(request) + b"mn\r\n")
    assert c.read_until(b"MN\r\n") == b"".join(expected) + b"MN\r\n"
    for key, (flags, value) in sorted(final.items()):
        assert c.request(b"get %s\r\n" % key) == \
            b"VALUE %s %d %d\r\n%s\r\nEND\r\n" % (key, flags, len(value), value)
    assert c.request(b"get big\r\n") == b"END\r\n"


def test_a_pipeline_of_meta_sets_answers_in_order_with_their_flags(server, connect):
    """A run of ms waits for the group commit as a run of sets does, and each reply keeps its
    place and its flags: O and k echoed in request order, c with the item's cas, q hiding HD; an
    ms that cannot join the run (an add of a present key, a base64 key, an oversized one) and an
    mg of keys set just before answer between them."""
    c = connect(server)
    big = b"x" * (2 * 1024 * 1024)
    request, expected, final = [], [], {}
    for i in range(150):
        key = b"m%d" % (i % 100)  # the last 50 set keys of the first 50 again
        value = b"v%d" % i
        flags = [b"F%d" % i, b"T0"]
        reply = [b"HD"]
        if i % 5 == 0:
            flags += [b"O%d" % i, b"k"]
            reply += [b"O%d" % i, b"k" + key]
        if i < 40 and i % 4 == 1:  # until the first refusal, the n-th store is cas n
            flags.append(b"c")
            reply.append(b"c%d" % (i + 1))
        quiet = i % 7 == 3
        if quiet:
            flags.append(b"q")
        request.append(b"ms %s %d %s\r\n%s\r\n" % (key, len(value), b" ".join(flags), value))
        expected.append(b"" if quiet else b" ".join(reply) + b"\r\n")
        final[key] = (i, value)
        if i == 40:
            request.append(b"ms %s 2 ME O40\r\nno\r\n" % key)
            expected.append(b"NS O40\r\n")
        if i == 60:
            request.append(b"ms YjY0 3 b k\r\nb64\r\n")  # the key "b64", base64
            expected.append(b"HD kYjY0 b\r\n")
        if i == 70:
            request.append(b"ms big %d O70\r\n%s\r\n" % (len(big), big))
            expected.append(b"SERVER_ERROR object too large for cache\r\n")
        if i in (30, 120):  # this set's key and the one before
            for k in (b"m%d" % (i % 100), b"m%d" % ((i - 1) % 100)):
                request.append(b"mg %s v f\r\n" % k)
                expected.append(b"VA %d f%d\r\n%s\r\n" % (len(final[k][1]), final[k][0],
                                                             final[k][1]))
    c.send(b"".join(request) + b"mn\r\n")
    assert c.read_until(b"MN\r\n") == b"".join(expected) + b"MN\r\n"
    for key, (flags, value) in sorted(final.items()):
        assert c.request(b"mg %s v f\r\n" % key) == \
            b"VA %d f%d\r\n%s\r\n" % (len(value), flags, value)
    assert c.request(b"mg b64 v\r\nmg big v\r\n") == b"VA 3\r\nb64\r\nEN\r\n"


def test_command_split_into_one_byte_sends(server, connect):
    c = connect(server)
    data = b"set k 7 0 5\r\nhello\r\nget k\r\nmg k v f\r\n"
    for i in range(len(data)):
        c.send(data[i:i + 1])
    c.expect(b"STORED\r\nVALUE k 7 5\r\nhello\r\nEND\r\nVA 5 f7\r\nhello\r\n")
    assert c.request(b"") == b""


# --- meta commands --------------------------------------------------------------------------

def test_meta_get_flags(server, connect):
    c = connect(server)
    assert c.request(b"ms foo 3 F5\r\nbar\r\n") == b"HD\r\n"
    assert c.request(b"mg foo v\r\n") == b"VA 3\r\nbar\r\n"
    assert c.request(b"mg foo\r\n") == b"HD\r\n"
    assert c.request(b"mg foo v f t c k s\r\n") == b"VA 3 f5 t-1 c1 kfoo s3\r\nbar\r\n"
    assert c.request(b"mg foo k s v O2\r\n") == b"VA 3 kfoo s3 O2\r\nbar\r\n"  # request order
    assert c.request(b"mg foo O123 k\r\n") == b"HD O123 kfoo\r\n"
    assert c.request(b"mg foo v q\r\n") == b"VA 3\r\nbar\r\n"  # q hides misses only
    assert c.request(b"mg missing v\r\n") == b"EN\r\n"
    assert c.request(b"mg missing v q\r\n") == b""
    assert re.fullmatch(rb"HD h1 l[01] t-1\r\n", c.request(b"mg foo h l t\r\n"))
    assert c.request(b"mg nohit h\r\n") == b"EN\r\n"
    assert c.request(b"ms fresh 1\r\nx\r\nmg fresh h\r\nmg fresh h\r\n") == \
        b"HD\r\nHD h0\r\nHD h1\r\n"


def test_meta_get_ttl(server, connect):
    c = connect(server)
    assert c.request(b"ms foo 3 T100\r\nbar\r\n") == b"HD\r\n"
    # one-second clock: a tick may fall between the two commands
    assert re.fullmatch(rb"VA 3 t(99|100)\r\nbar\r\n", c.request(b"mg foo v t\r\n"))
    assert re.fullmatch(rb"VA 3 t(49|50)\r\nbar\r\n", c.request(b"mg foo T50 v t\r\n"))


def test_meta_get_errors(server, connect):
    c = connect(server)
    assert c.request(b"mg\r\n") == b"ERROR\r\n"
    assert c.request(b"mg foo zz\r\n") == b"CLIENT_ERROR invalid flag\r\n"
    assert c.request(b"mg " + K251 + b" v\r\n") == b"CLIENT_ERROR bad command line format\r\n"
    assert c.request(b"mg foo O" + b"o" * 40 + b"\r\n") == \
        b"CLIENT_ERROR opaque token too long\r\n"


def test_meta_set_flags_and_cas(server, connect):
    c = connect(server)
    assert c.request(b"ms foo 3 F5 T0\r\nbar\r\n") == b"HD\r\n"  # cas 1
    assert c.request(b"mg foo v f c\r\n") == b"VA 3 f5 c1\r\nbar\r\n"
    assert c.request(b"ms foo 3 C999\r\nabc\r\n") == b"EX\r\n"
    assert c.request(b"ms foo 3 C1 c\r\nbaz\r\n") == b"HD c2\r\n"
    assert c.request(b"ms foo 3 C1 c\r\nbaz\r\n") == b"EX c0\r\n"
    assert c.request(b"ms foo 3 q\r\nqqq\r\n") == b""  # cas 3; HD hidden
    assert c.request(b"ms foo 3 O77 k c\r\nabc\r\n") == b"HD O77 kfoo c4\r\n"
    assert c.request(b"mg foo v f\r\n") == b"VA 3 f0\r\nabc\r\n"  # F defaults to 0


def test_meta_set_invalidate(server, connect):
    c = connect(server)
    assert c.request(b"ms foo 3\r\nnew\r\n") == b"HD\r\n"        # cas 1
    assert c.request(b"ms foo 3 C1\r\nnew\r\n") == b"HD\r\n"     # cas 2
    # I with an older cas: stored, but marked stale (X), and the first fetch wins (W)
    assert c.request(b"ms foo 3 C1 I\r\nold\r\n") == b"HD\r\n"
    assert c.request(b"mg foo v c\r\n") == b"VA 3 c3 X W\r\nold\r\n"
    assert c.request(b"mg foo v c\r\n") == b"VA 3 c3 Z X\r\nold\r\n"


def test_meta_set_modes(server, connect):
    c = connect(server)
    assert c.request(b"ms k 2 ME\r\nhi\r\n") == b"HD\r\n"      # add, missing
    assert c.request(b"ms k 2 ME\r\nho\r\n") == b"NS\r\n"      # add, present
    assert c.request(b"ms k 2 MA\r\n+a\r\n") == b"HD\r\n"      # append
    assert c.request(b"ms k 2 MP\r\np+\r\n") == b"HD\r\n"      # prepend
    assert c.request(b"mg k v\r\n") == b"VA 6\r\np+hi+a\r\n"
    assert c.request(b"ms k 2 MR\r\nrr\r\n") == b"HD\r\n"      # replace, present
    assert c.request(b"ms nx 2 MR\r\nrr\r\n") == b"NS\r\n"     # replace, missing
    assert c.request(b"ms nx 2 MA\r\nrr\r\n") == b"NS\r\n"     # append, missing
    assert c.request(b"ms nx 2 MP\r\nrr\r\n") == b"NS\r\n"     # prepend, missing
    assert c.request(b"ms k 2 MS\r\nss\r\n") == b"HD\r\n"      # set
    assert c.request(b"mg k v\r\nmg nx v\r\n") == b"VA 2\r\nss\r\nEN\r\n"
    assert c.request(b"ms k 2 ME q\r\nhi\r\n") == b"NS\r\n"    # q hides HD only
    assert c.request(b"ms k 2 MX\r\nzz\r\n") == b"CLIENT_ERROR invalid mode for ms M token\r\n"


def test_meta_set_errors(server, connect):
    c = connect(server)
    assert c.request(b"ms foo\r\n") == b"CLIENT_ERROR bad command line format\r\n"
    assert c.request(b"ms foo abc\r\n") == b"CLIENT_ERROR bad command line format\r\n"
    # a bad flag after a valid length: the data block is swallowed
    assert c.request(b"ms foo 2 Fabc\r\nxx\r\n") == b"CLIENT_ERROR bad command line format\r\n"
    assert c.request(b"ms foo 2 T-1\r\nxx\r\nmg foo v\r\n") == b"HD\r\nEN\r\n"  # expired at once


def test_meta_delete(server, connect):
    c = connect(server)
    assert c.request(b"ms a 1\r\n1\r\nms b 1\r\n2\r\nms c 1\r\n3\r\n") == b"HD\r\n" * 3
    assert c.request(b"md a\r\n") == b"HD\r\n"
    assert c.request(b"md a\r\n") == b"NF\r\n"
    assert c.request(b"md b q\r\n") == b""                      # q hides HD
    assert c.request(b"md b q\r\n") == b"NF\r\n"                # ...but not NF
    assert c.request(b"md c O5 C99\r\n") == b"EX O5\r\n"
    assert c.request(b"md c C3 O6\r\n") == b"HD O6\r\n"
    assert c.request(b"md zz O7 q\r\n") == b"NF O7\r\n"
    assert c.request(b"mg a v\r\nmg b v\r\nmg c v\r\n") == b"EN\r\n" * 3
    assert c.request(b"md\r\n") == b"ERROR\r\n"


def test_meta_delete_invalidate(server, connect):
    c = connect(server)
    assert c.request(b"ms a 3\r\nold\r\n") == b"HD\r\n"   # cas 1
    assert c.request(b"md a I\r\n") == b"HD\r\n"          # stale, cas bumped to 2
    assert c.request(b"mg a v c\r\n") == b"VA 3 c2 X W\r\nold\r\n"
    assert c.request(b"mg a v c\r\n") == b"VA 3 c2 Z X\r\nold\r\n"


def test_meta_arithmetic(server, connect):
    c = connect(server)
    assert c.request(b"ma cnt\r\n") == b"NF\r\n"
    assert c.request(b"ma cnt q\r\n") == b"NF\r\n"
    assert c.request(b"ma cnt N0 J13\r\n") == b"HD\r\n"          # created as 13, cas 1
    assert c.request(b"ma cnt v\r\n") == b"VA 2\r\n14\r\n"
    assert c.request(b"ma cnt MD D5 v\r\n") == b"VA 1\r\n9\r\n"
    assert c.request(b"ma cnt M- D100 v\r\n") == b"VA 1\r\n0\r\n"  # decr stops at 0
    assert c.request(b"ma cnt M+ D7 v\r\n") == b"VA 1\r\n7\r\n"
    assert c.request(b"ma cnt MI\r\n") == b"HD\r\n"
    assert c.request(b"ma cnt q\r\n") == b""                       # 9, HD hidden; cas 7
    assert c.request(b"ma cnt O9 v t c\r\n") == b"VA 2 O9 t-1 c8\r\n10\r\n"
    assert c.request(b"ma cnt C1 v\r\n") == b"EX\r\n"
    assert c.request(b"ma cnt C8 v\r\n") == b"VA 2\r\n11\r\n"
    assert c.request(b"ma cnt D18446744073709551615 v\r\n") == b"VA 2\r\n10\r\n"  # wraps
    assert re.fullmatch(rb"VA 2 t(29|30)\r\n11\r\n", c.request(b"ma cnt T30 v t\r\n"))
    assert c.request(b"ma viv N0 J5 v\r\nma viv N0 J5 v\r\n") == b"VA 1\r\n5\r\nVA 1\r\n6\r\n"
    assert c.request(b"ms str 1\r\na\r\nma str\r\n") == \
        b"HD\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
    assert c.request(b"ma cnt Dabc\r\n") == b"CLIENT_ERROR invalid or duplicate flag\r\n"
    assert c.request(b"ma\r\n") == b"ERROR\r\n"


def test_meta_noop_and_debug(server, connect):
    c = connect(server)
    c.send(b"mn\r\n")
    c.expect(b"MN\r\n")
    assert c.request(b"me foo\r\n") == b"EN\r\n"
    assert c.request(b"ms foo 3\r\nbar\r\n") == b"HD\r\n"
    assert re.fullmatch(rb"ME foo exp=-1 la=\d+ cas=1 fetch=no cls=\d+ size=\d+\r\n",
                        c.request(b"me foo\r\n"))
    assert c.request(b"me\r\n") == b"CLIENT_ERROR bad command line format\r\n"


def test_mn_ends_a_quiet_pipeline(server, connect):
    c = connect(server)
    assert c.request(b"ms a 1 q\r\n1\r\nms b 1 q\r\n2\r\nms c 1 q\r\n3\r\n") == b""
    c.send(b"mg a v q k\r\nmg miss1 v q k\r\nmg b v q k\r\nmg miss2 v q\r\nmg c v q k\r\n"
           b"md miss3 q\r\nmd a q\r\nmn\r\n")
    assert c.read_until(b"MN\r\n") == (b"VA 1 ka\r\n1\r\nVA 1 kb\r\n2\r\nVA 1 kc\r\n3\r\n"
                                       b"NF\r\nMN\r\n")


# --- robustness -----------------------------------------------------------------------------

def test_garbage_bytes_do_not_hurt_other_connections(server_process, connect):
    server = server_process.address
    good = connect(server)
    value = bytes(range(256)) * 4
    assert good.request(b"set keep_me_intact 42 0 %d\r\n" % len(value) + value + b"\r\n") == \
        b"STORED\r\n"
    rng = random.Random(20240501)
    for i in range(5):
        bad = connect(server, timeout=3)
        junk = bytes(rng.randrange(256) for _ in range(4000))
        junk = b"\x00" * 64 + junk.replace(b"\x80", b"\x81")  # NULs; not binary-protocol magic
        try:
            bad.send(junk + b"\r\nget x\x00y\r\n" + b"\x00\x00\r\n")
        except OSError:
            pass  # the server may close a connection that sends junk
        bad.close()
        assert server_process.alive()
        assert good.request(b"get keep_me_intact\r\n") == \
            b"VALUE keep_me_intact 42 %d\r\n" % len(value) + value + b"\r\nEND\r\n", i
    fresh = connect(server)
    assert fresh.request(b"get keep_me_intact\r\n").startswith(b"VALUE keep_me_intact 42 1024")


def test_overlong_line_without_newline_closes_connection(server, connect):
    c = connect(server)
    try:
        c.send(b"x" * 8192)
    except OSError:
        pass
    assert c.closed_by_peer(timeout=10)
    assert connect(server).request(b"version\r\n").startswith(b"VERSION ")


def test_shutdown_disabled_without_A(server_process, connect):
    c = connect(server_process.address)
    assert c.request(b"shutdown\r\n") == b"ERROR: shutdown not enabled\r\n"
    assert server_process.alive()
    assert c.request(b"version\r\n").startswith(b"VERSION ")


def test_shutdown_with_A_exits(server_factory, connect):
    s = server_factory("-A")
    c = connect(s.address)
    c.send(b"shutdown\r\n")
    assert s.wait_exit(timeout=15) is not None, "server still running after shutdown"
    assert c.closed_by_peer(timeout=5)
    assert c.buf == b""  # memcached exits without a reply

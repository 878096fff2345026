"""Many clients at once, the connection limit (-c), and a client that never reads."""

import errno
import select
import socket
import threading
import time

from pymemcache.client.base import Client


def test_20_concurrent_clients_see_their_own_values(server):
    errors = []
    start = threading.Barrier(20, timeout=30)

    def worker(n):
        client = Client(server, connect_timeout=5, timeout=20, default_noreply=False)
        try:
            start.wait()
            for i in range(200):
                key = f"client{n}:key{i % 25}"
                value = b"%d:%d:" % (n, i) + bytes([n]) * (i % 300)
                if not client.set(key, value):
                    errors.append(f"{key}: set failed")
                got = client.get(key)
                if got != value:
                    errors.append(f"{key}: got {got!r:.60} want {value!r:.60}")
        except Exception as e:  # reported below; a thread cannot fail the test itself
            errors.append(f"client {n}: {e!r}")
        finally:
            client.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a client hung"
    assert errors == []


def _version_or_rejection(address, timeout=5.0):
    """Opens a connection and asks for `version`. Returns (socket, "ok") when served, or
    (None, how) when the server refused it or closed it: `how` is "refused", "closed" or the
    error line the server sent before closing. Raises if the server neither answers nor
    closes within the deadline (a connection left hanging is not a clean rejection)."""
    try:
        s = socket.create_connection(address, timeout=timeout)
    except ConnectionRefusedError:
        return None, "refused"
    try:
        s.sendall(b"version\r\n")
        data = b""
        deadline = time.monotonic() + timeout
        while not data.endswith(b"\r\n"):
            s.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        s.close()
        raise AssertionError("over-limit connection neither served nor closed") from None
    except OSError as e:
        s.close()
        if e.errno in (errno.ECONNRESET, errno.EPIPE):
            return None, "closed"
        raise
    if data.startswith(b"VERSION "):
        return s, "ok"
    # Anything else must be an error line followed by the close.
    assert data == b"" or data.startswith((b"ERROR", b"SERVER_ERROR")), data
    s.settimeout(timeout)
    try:
        rest = s.recv(4096)
    except OSError:
        rest = b""
    s.close()
    assert rest == b"", rest
    return None, (data.strip().decode() or "closed")


def test_connection_limit(server_factory):
    limit = 32  # memcached counts its own descriptors in -c: it serves fewer clients than this
    s = server_factory("-c", str(limit))
    existing = [Client(s.address, connect_timeout=5, timeout=10, default_noreply=False)
                for _ in range(3)]
    for i, c in enumerate(existing):
        assert c.set(f"existing{i}", b"v%d" % i) is True

    served, rejections = [], []
    try:
        for _ in range(2 * limit):
            sock, how = _version_or_rejection(s.address)
            if sock is not None:
                served.append(sock)
            else:
                rejections.append(how)
        # The limit is enforced, cleanly, and never exceeded.
        assert rejections, "no connection was refused beyond -c"
        assert len(served) + len(existing) <= limit
        # Connections made before the limit was reached keep working.
        for i, c in enumerate(existing):
            assert c.get(f"existing{i}") == b"v%d" % i
            assert c.set(f"existing{i}", b"again") is True
        assert s.alive()
    finally:
        for sock in served:
            sock.close()

    # After the others close, new connections are accepted again (closing is asynchronous on
    # the server side: retry until a deadline).
    deadline = time.monotonic() + 10
    accepted = []
    while len(accepted) < 5 and time.monotonic() < deadline:
        sock, _how = _version_or_rejection(s.address)
        if sock is not None:
            accepted.append(sock)
    for sock in accepted:
        sock.close()
    assert len(accepted) == 5, "new connections not accepted after others closed"
    for c in existing:
        c.close()


def test_client_that_never_reads_does_not_grow_server_memory(server_factory, connect):
    s = server_factory()
    setup = connect(s.address)
    value = b"z" * (100 * 1024)
    assert setup.request(b"set big 0 0 %d\r\n" % len(value) + value + b"\r\n") == b"STORED\r\n"
    assert setup.request(b"get big\r\n").startswith(b"VALUE big 0 102400\r\n")
    rss_before = s.rss_kib()
    max_growth_mib = 64
    expected_big = b"VALUE big 0 102400\r\n" + value + b"\r\nEND\r\n"

    hog = socket.create_connection(s.address, timeout=5)
    hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    hog.setblocking(False)
    batch = 100
    request = b"get big\r\n" * batch
    total, sent_requests = 50000, 0  # 5 GB of replies if the server buffered them all
    try:
        # Send the gets without ever reading, until all are sent or the server has stopped
        # reading from us for 2 s straight (back-pressure reached the sender).
        pending, stalled_since = b"", None
        deadline = time.monotonic() + 60
        while sent_requests < total and time.monotonic() < deadline:
            pending = pending or request
            _r, writable, _x = select.select([], [hog], [], 0.1)
            if not writable:
                stalled_since = stalled_since or time.monotonic()
                if time.monotonic() - stalled_since > 2.0:
                    break
                continue
            stalled_since = None
            try:
                n = hog.send(pending)
            except BlockingIOError:
                continue
            pending = pending[n:]
            if not pending:
                sent_requests += batch
        assert s.alive()
        # For 2 s (bounded), while the server may still be working through what it has
        # read: its memory stays bounded and another client is served promptly each time.
        other = connect(s.address, timeout=2)
        worst_growth, worst_latency = 0.0, 0.0
        window_end = time.monotonic() + 2.0
        rounds = 0
        while time.monotonic() < window_end or rounds < 3:
            t0 = time.monotonic()
            assert other.request(b"set other 0 0 2\r\nok\r\nget other\r\n") == \
                b"STORED\r\nVALUE other 0 2\r\nok\r\nEND\r\n"
            assert other.request(b"get big\r\n") == expected_big
            worst_latency = max(worst_latency, time.monotonic() - t0)
            worst_growth = max(worst_growth, (s.rss_kib() - rss_before) / 1024)
            assert worst_growth < max_growth_mib, \
                f"server RSS grew {worst_growth:.1f} MiB with {sent_requests} unread gets sent"
            rounds += 1
            select.select([], [], [], 0.05)  # pacing of the sampling loop, not synchronisation
        assert worst_latency < 2.0, f"another client waited {worst_latency:.2f}s"
    finally:
        hog.close()
    assert sent_requests >= 1000
    # and the server is fine after the hog goes away
    assert connect(s.address).request(b"get big\r\n") == expected_big
    print(f"sent {sent_requests} gets; RSS growth {worst_growth:.1f} MiB; "
          f"worst latency {worst_latency * 1000:.1f} ms")

"""`stats latency`: where requests spend their time inside pmcached (--latency-stats), the
instrument of docs/TAIL_LATENCY.md. pmcached only (memcached has no such group)."""

PHASES = ("parse", "execute", "write", "request")


def latency_stats(conn):
    conn.send(b"stats latency\r\n")
    stats = {}
    while True:
        line = conn.read_line()
        if line == b"END\r\n":
            return stats
        _, name, value = line.decode().split()
        stats[name] = value


def test_off_by_default_and_nothing_recorded(server, connect):
    c = connect(server)
    for i in range(20):
        assert c.request(b"set k%d 0 0 1\r\nx\r\n" % i) == b"STORED\r\n"
    stats = latency_stats(c)
    assert stats["latency_stats"] == "off"
    for phase in PHASES:
        assert stats[f"{phase}_count"] == "0"


def test_every_phase_is_recorded_and_ordered(server_factory, connect):
    c = connect(server_factory("--latency-stats").address)
    for i in range(200):
        assert c.request(b"set k%d 0 0 3\r\nabc\r\n" % i) == b"STORED\r\n"
    # 100 gets pipelined in one send: one batch, 100 commands.
    c.send(b"".join(b"get k%d\r\n" % i for i in range(100)))
    for i in range(100):
        assert c.read_line() == b"VALUE k%d 0 3\r\n" % i
        assert c.read_line() == b"abc\r\n"
        assert c.read_line() == b"END\r\n"
    stats = latency_stats(c)
    assert stats["latency_stats"] == "on"
    assert int(stats["parse_count"]) >= 300
    # Every command parsed was executed (sets that waited in a batch too), but for this stats
    # command, whose execution is recorded after its reply is built. (Each request also sends
    # an `mn`.)
    assert int(stats["execute_count"]) == int(stats["parse_count"]) - 1
    # Each set is a batch of its own; the pipelined gets may come in one read or a few.
    assert 201 <= int(stats["request_count"]) <= 300
    assert stats["write_count"] == stats["request_count"]
    for phase in PHASES:
        values = [int(stats[f"{phase}_{p}_ns"]) for p in ("p50", "p99", "p999", "max")]
        assert values == sorted(values), (phase, values)
        assert values[-1] > 0, phase
    # A batch's turnaround holds its commands' execution.
    assert int(stats["request_max_ns"]) >= int(stats["execute_p50_ns"])


def test_stats_reset_empties_the_histograms(server_factory, connect):
    c = connect(server_factory("--latency-stats").address)
    for i in range(50):
        assert c.request(b"set k%d 0 0 1\r\nx\r\n" % i) == b"STORED\r\n"
    assert c.request(b"stats reset\r\n") == b"RESET\r\n"
    stats = latency_stats(c)
    # Only the reset itself and this stats command can have been recorded since.
    for phase in PHASES:
        assert int(stats[f"{phase}_count"]) <= 2, (phase, stats)

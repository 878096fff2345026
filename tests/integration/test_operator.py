"""Operator details of a persistent pool (issue 20): a new pool costs memory and disk for what it
holds, not for its size; a restart with a larger -m keeps the pool's size and says so; a pool
directory the server's user cannot write is refused in one line naming that user.

Runs pmcached on the wort engine whatever engine PMCACHED_SERVER names (these are properties of
the pool, which every PM engine shares).
"""
import os
import pwd
import re
import shutil
import subprocess
import tempfile

import pytest

START_DEADLINE_S = 20.0


def stat_value(conn, name):
    reply = conn.request(b"stats\r\n")
    while not reply.endswith(b"END\r\n"):
        reply += conn.read_until(b"END\r\n")
    match = re.search(rb"STAT " + name.encode() + rb" (\d+)\r\n", reply)
    assert match, reply
    return int(match.group(1))


@pytest.fixture
def wort(pmcached_binary):
    return f"{pmcached_binary} --engine wort"


def test_new_pool_costs_what_it_holds_not_its_size(server_factory, wort, tmp_path, connect):
    pool = tmp_path / "big.pool"
    for start in ("created", "restarted"):
        server = server_factory("-m", "1024", "--pool", pool, command=wort)
        conn = connect(server.address)
        conn.request(b"set k 0 0 1\r\nv\r\n")
        disk_mb = os.stat(pool).st_blocks * 512 / 2**20
        rss_mb = server.rss_kib() / 1024
        # Before issue 20: 1024 MB on disk and ~1010 MB resident at once.
        assert disk_mb <= 16, f"{start}: an empty 1 GB pool takes {disk_mb:.0f} MB on disk"
        assert rss_mb <= 256, f"{start}: an empty 1 GB pool keeps {rss_mb:.0f} MB resident"
        assert os.path.getsize(pool) == 1 << 30
        assert server.stop()


def test_restart_with_larger_m_keeps_the_pool_size_and_says_so(server_factory, wort, tmp_path,
                                                               connect):
    pool = tmp_path / "p.pool"
    first = server_factory("-m", "64", "--pool", pool, command=wort)
    limit = stat_value(connect(first.address), "limit_maxbytes")
    assert first.stop()
    assert "keeps its size" not in first.log_text()
    second = server_factory("-m", "128", "--pool", pool, command=wort)
    assert stat_value(connect(second.address), "limit_maxbytes") == limit
    log = second.log_text()
    assert re.search(r"\[warning\] pool \S+ keeps its size of 64 MB: -m 128 applies only when a "
                     r"pool is created", log), log
    assert re.search(r"listening on .*, 64 MB, ", log), log
    assert os.path.getsize(pool) == 64 << 20


def run_refused(argv, user):
    """Runs pmcached that must refuse to start; returns (status, stderr)."""
    preexec = None
    if user is not None:
        def preexec():
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
    proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=START_DEADLINE_S, preexec_fn=preexec)
    return proc.returncode, proc.stderr.decode(errors="replace")


def test_unwritable_pool_directory_names_the_user(pmcached_binary):
    # As root, run the server as nobody in a root-owned directory (a volume owned by another
    # user); as anyone else, in a directory of one's own without write permission.
    root = os.geteuid() == 0
    user = pwd.getpwnam("nobody") if root else pwd.getpwuid(os.geteuid())
    top = tempfile.mkdtemp(prefix="pmcached-operator-")
    try:
        os.chmod(top, 0o755)  # nobody must reach the data directory
        data = os.path.join(top, "data")
        os.mkdir(data, 0o755 if root else 0o555)
        argv = [pmcached_binary, "--engine", "wort", "-p", "0", "--pool",
                os.path.join(data, "pmcached.pool")]
        status, err = run_refused(argv, user if root else None)
        assert status == 2, err
        owner = pwd.getpwuid(os.stat(data).st_uid).pw_name
        expected = (f"pmcached: --pool: user {user.pw_name} (uid {user.pw_uid}) needs write access "
                    f"to directory {data} (owned by {owner}, uid {os.stat(data).st_uid}), "
                    f"e.g. chown {user.pw_uid} {data}\n")
        assert err == expected
        assert not os.path.exists(os.path.join(data, "pmcached.pool"))
    finally:
        os.chmod(os.path.join(top, "data"), 0o755)
        shutil.rmtree(top)

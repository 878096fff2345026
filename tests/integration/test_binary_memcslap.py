"""libmemcached's memcslap in binary mode: loads keys and reads them back (get, then mget) with
four threads; every read must hit. Run on one engine (the per-engine binary checks are in
test_binary_protocol.py)."""

import re
import shutil
import subprocess

import pytest

MEMCSLAP = shutil.which("memcslap") or "/usr/bin/memcslap"


def stats(conn):
    reply = conn.request(b"stats\r\n").decode()
    return {m[1]: m[2] for m in re.finditer(r"STAT (\S+) (\S+)\r\n", reply)}


@pytest.mark.parametrize("test", ["get", "mget"])
def test_memcslap_binary_runs_clean_and_every_read_hits(test, server, connect):
    if not shutil.which("memcslap"):
        pytest.fail("memcslap (libmemcached-tools) is not installed")
    host, port = server
    proc = subprocess.run([MEMCSLAP, f"--servers={host}:{port}", "--binary", f"--test={test}",
                           "--concurrency=4", "--execute-number=2000"],
                          capture_output=True, text=True, timeout=120)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert f"Time to {test}" in output, output
    assert not re.search(r"(?i)error|fail", output), output
    s = stats(connect(server))
    assert int(s["curr_items"]) > 0, s
    assert int(s["cmd_get"]) > 0, s
    assert s["get_misses"] == "0", s
    assert s["get_hits"] == s["cmd_get"], s

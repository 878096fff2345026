"""libmemcached's protocol conformance tool, ascii half: all 27 tests must print [pass]. The binary
half runs in test_binary_protocol.py."""

import re
import shutil
import subprocess

import pytest

MEMCCAPABLE = shutil.which("memccapable") or "/usr/bin/memccapable"

# What memccapable (libmemcached-tools 1.1) runs with -a, in order.
ASCII_TESTS = [
    "version", "quit", "verbosity", "set", "set noreply", "get", "gets", "mget", "flush",
    "flush noreply", "add", "add noreply", "replace", "replace noreply", "cas", "cas noreply",
    "delete", "delete noreply", "incr", "incr noreply", "decr", "decr noreply", "append",
    "append noreply", "prepend", "prepend noreply", "stat",
]

RESULT_LINE = re.compile(r"^(?:ascii|binary) (?P<name>\S.*?)\s+\[(?P<result>\w+)\]\s*$")


def run_memccapable(server, mode):
    """Runs memccapable in `mode` ("-a" ascii, "-b" binary); returns ({test: result}, output)."""
    if not shutil.which("memccapable"):
        pytest.fail("memccapable (libmemcached-tools) is not installed")
    host, port = server
    proc = subprocess.run([MEMCCAPABLE, "-h", host, "-p", str(port), mode, "-t", "10"],
                          capture_output=True, text=True, timeout=120)
    output = proc.stdout + proc.stderr
    results = {}
    for line in proc.stdout.splitlines():
        m = RESULT_LINE.match(line)
        if m:
            results[m.group("name")] = m.group("result")
    assert proc.returncode == 0, output
    return results, output


def test_memccapable_ascii_all_27_pass(server):
    results, output = run_memccapable(server, "-a")
    assert list(results) == ASCII_TESTS, output
    not_passed = {name: r for name, r in results.items() if r != "pass"}
    assert not not_passed, output
    assert "All tests passed" in output, output

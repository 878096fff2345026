"""libmemcached's protocol conformance tool, ascii half: all 27 tests must print [pass]."""

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

pytestmark = pytest.mark.skipif(not shutil.which("memccapable"),
                                reason="memccapable (libmemcached-tools) not installed")

RESULT_LINE = re.compile(r"^ascii (?P<name>\S.*?)\s+\[(?P<result>\w+)\]\s*$")


def test_memccapable_ascii_all_27_pass(server):
    host, port = server
    proc = subprocess.run([MEMCCAPABLE, "-h", host, "-p", str(port), "-a", "-t", "10"],
                          capture_output=True, text=True, timeout=120)
    output = proc.stdout + proc.stderr
    results = {}
    for line in proc.stdout.splitlines():
        m = RESULT_LINE.match(line)
        if m:
            results[m.group("name")] = m.group("result")
    assert list(results) == ASCII_TESTS, output
    not_passed = {name: r for name, r in results.items() if r != "pass"}
    assert not not_passed, output
    assert "All tests passed" in proc.stdout, output
    assert proc.returncode == 0, output

"""The integration tests run over every registered engine, and `pmcached --list-engines` is what
they and the scripts ask for the list.

CMake registers the protocol suite once per engine and test_durability.py once per persistent
engine, from the engines it read out of engine/engine_registry.cc at configure time
(cmake/registered_engines.cmake); it passes those lists here as PMCACHED_SUITE_ENGINES and
PMCACHED_SUITE_PERSISTENT_ENGINES (comma-separated). A registered engine missing from them, or a
name that is not registered, fails here.
"""

import os
import re
import subprocess

import pytest


def suite_engines(variable):
    value = os.environ.get(variable)
    if value is None:
        pytest.skip(f"{variable} is set by CMake (tests/integration/CMakeLists.txt)")
    return [name for name in value.split(",") if name]


def test_protocol_suite_runs_on_every_registered_engine(registered_engines):
    assert suite_engines("PMCACHED_SUITE_ENGINES") == [e.name for e in registered_engines]


def test_durability_suite_runs_on_every_persistent_engine(registered_engines):
    assert suite_engines("PMCACHED_SUITE_PERSISTENT_ENGINES") == \
        [e.name for e in registered_engines if e.persistent]


def test_list_engines_prints_one_line_per_engine_and_exits_zero(pmcached_binary):
    result = subprocess.run([pmcached_binary, "--list-engines"], capture_output=True, text=True,
                            timeout=30, check=False)
    assert (result.returncode, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    assert result.stdout.endswith("\n") and lines
    for line in lines:
        assert re.fullmatch(r"[a-z0-9_]+ (persistent|volatile) \S.*", line), line
    names = [line.split(" ", 1)[0] for line in lines]
    assert len(set(names)) == len(names), names
    # The volatile baseline and the default engine are always there.
    assert "dram volatile" in [" ".join(line.split(" ", 2)[:2]) for line in lines]
    assert "wort" in names


def test_list_engines_with_a_bad_flag_exits_2_with_one_line(pmcached_binary):
    result = subprocess.run([pmcached_binary, "--list-engines", "--port", "70000"],
                            capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr

"""The Dockerfile's ENTRYPOINT and HEALTHCHECK, run as a container runtime would run them (exec
form, with the image's environment) but on this host, with the pmcached under test first on PATH:
both follow PMCACHED_PORT, so a server started on another port is healthy, and a health check
against a port nothing listens on fails. (Building the image needs a registry; this does not.)
"""
import json
import os
import pathlib
import re
import socket
import subprocess
import time

import pytest

DOCKERFILE = pathlib.Path(__file__).resolve().parents[2] / "Dockerfile"
HOST = "127.0.0.1"
DEADLINE_S = 20.0


def instruction(name):
    """The arguments of the last `name` instruction, continuation lines joined."""
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    lines = [line for line in text.splitlines() if line.startswith(name + " ")]
    assert lines, f"no {name} in the Dockerfile"
    return lines[-1][len(name) + 1:].strip()


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


@pytest.fixture
def image_env(pmcached_binary, tmp_path):
    """The environment the image gives its commands, with the binary under test as `pmcached`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pmcached").symlink_to(os.path.abspath(pmcached_binary))
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    for name, value in re.findall(r"(\w+)=(\S+)", instruction("ENV")):
        env[name] = value
    return env


def healthy(env, port):
    cmd = json.loads(re.sub(r"^(--\S+\s+)*CMD\s+", "", instruction("HEALTHCHECK")))
    return subprocess.run(cmd, env=dict(env, PMCACHED_PORT=str(port)), timeout=DEADLINE_S,
                          capture_output=True).returncode == 0


def test_entrypoint_and_healthcheck_follow_pmcached_port(image_env, tmp_path):
    assert image_env["PMCACHED_PORT"] == "11211"  # the image's default
    port = free_port()
    env = dict(image_env, PMCACHED_PORT=str(port))
    entrypoint = json.loads(instruction("ENTRYPOINT"))
    # Extra arguments as `docker run IMAGE ARGS` appends them: a later flag wins.
    argv = entrypoint + ["-l", HOST, "--pool", str(tmp_path / "pmcached.pool"), "-t", "2"]
    log = open(tmp_path / "server.log", "wb")
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + DEADLINE_S
        while not healthy(env, port):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"never healthy on port {port}: "
                            f"{(tmp_path / 'server.log').read_text()}")
            time.sleep(0.05)  # polling interval of a deadline-bounded wait
        assert f"listening on {HOST}:{port}" in (tmp_path / "server.log").read_text()
        assert not healthy(env, free_port())  # nothing listens there
    finally:
        proc.terminate()
        assert proc.wait(timeout=DEADLINE_S) == 0  # exec: pmcached itself got the SIGTERM
        log.close()

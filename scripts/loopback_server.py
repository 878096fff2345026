"""Helpers shared by the benchmark and measurement scripts: a free loopback port, servers killed at
exit, waiting for a server to answer,
the machine's CPU model, and reading bench/mc_load's result lines."""
import atexit
import re
import socket
import time

# One phase of bench/mc_load: label, phase, requests, seconds, ops/s, p50, p99, p99.9 (us).
MC_LOAD_LINE = re.compile(r"^(\S+)\s+(SET|GET) requests (\d+) in ([\d.]+) s: (\d+) ops/s, "
                          r"p50 (\d+) us, p99 (\d+) us, p99.9 (\d+) us")


_STARTED = []
atexit.register(lambda: [p.kill() for p in _STARTED if p.poll() is None])


def kill_at_exit(proc):
    """Kills `proc` when the script exits, if it is still running (a failed run leaves no server)."""
    _STARTED.append(proc)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(proc, port, timeout=30.0):
    """Waits until the server on `port` answers `version`. Returns None when it does, otherwise
    why not (the process exited, or the time ran out)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return f"server exited at start-up (status {proc.returncode})"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"version\r\n")
                if s.recv(100).startswith(b"VERSION"):
                    return None
        except OSError:
            time.sleep(0.05)
    return f"server on port {port} did not answer within {timeout:.0f} s"


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"

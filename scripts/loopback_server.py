"""Helpers shared by the benchmark scripts: a free loopback port, waiting for a server to answer,
and the machine's CPU model."""
import socket
import time


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

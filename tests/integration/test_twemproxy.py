"""Scale-out behind twemproxy (Debian's nutcracker): two pmcached backends on persistent pools,
ketama distribution. Keys loaded through the proxy must all read back through it after one
backend is SIGKILLed and restarted on its pool (same port, so the proxy's ring is unchanged).
Registered once (wort), not per engine.
"""

import os
import shlex
import shutil
import subprocess
import time

import pytest

from conftest import HOST, RawConn, free_port, listens, server_argv

NUTCRACKER = shutil.which("nutcracker") or "/usr/sbin/nutcracker"
KEYS = 3000
DEADLINE_S = 20.0

CONFIG = """pmcached:
  listen: {host}:{port}
  hash: fnv1a_64
  distribution: ketama
  timeout: 2000
  auto_eject_hosts: false
  server_connections: 1
  servers:
{servers}
"""


def wait_listening(proc, port):
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"exited with status {proc.returncode}"
        if listens(proc.pid, port):
            return
        time.sleep(0.01)  # polling interval of a deadline-bounded wait
    raise AssertionError(f"not listening on port {port}")


class Backend:
    def __init__(self, command, tmp_path, name):
        self.command, self.port = command, free_port()
        self.pool = tmp_path / f"{name}.pool"
        self.log = open(tmp_path / f"{name}.log", "ab")
        self.proc = None

    def start(self):
        argv = server_argv(self.command, self.port, ["--engine", "wort"], pool_path=self.pool)
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        wait_listening(self.proc, self.port)

    def kill(self):
        self.proc.kill()
        self.proc.wait(timeout=DEADLINE_S)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=DEADLINE_S)
        self.log.close()


def test_keys_survive_a_backend_crash_behind_nutcracker(server_command, tmp_path):
    if not os.access(NUTCRACKER, os.X_OK):
        pytest.fail("nutcracker is not installed (scripts/install-deps.sh installs it)")
    command = " ".join(a for a in shlex.split(server_command)[:1])  # the binary; wort is ours
    backends = [Backend(command, tmp_path, f"backend{i}") for i in range(2)]
    proxy = None
    try:
        for b in backends:
            b.start()
        proxy_port, stats_port = free_port(), free_port()
        servers = "\n".join(f"   - {HOST}:{b.port}:1 backend{i}" for i, b in enumerate(backends))
        config = tmp_path / "nutcracker.yml"
        config.write_text(CONFIG.format(host=HOST, port=proxy_port, servers=servers))
        proxy = subprocess.Popen([NUTCRACKER, "-c", str(config), "-s", str(stats_port),
                                  "-a", HOST, "-o", str(tmp_path / "nutcracker.log")],
                                 stdin=subprocess.DEVNULL, start_new_session=True)
        wait_listening(proxy, proxy_port)

        c = RawConn((HOST, proxy_port))
        values = {b"key:%05d" % i: b"value-%d-" % i + b"x" * (i % 50) for i in range(KEYS)}
        batch = b"".join(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(v), v) for k, v in values.items())
        c.send(batch)
        for _ in values:
            assert c.read_line() == b"STORED\r\n"
        # ketama spread the keys over both backends.
        counts = []
        for b in backends:
            s = RawConn((HOST, b.port))
            stats = s.request(b"stats\r\n").decode()  # direct, not through the proxy
            counts.append(int(stats.split("STAT curr_items ")[1].split("\r\n")[0]))
            s.close()
        assert sum(counts) == KEYS and min(counts) > KEYS // 5, counts

        backends[0].kill()
        backends[0].start()  # the same port and pool: a warm restart
        c.close()
        c = RawConn((HOST, proxy_port))
        keys = list(values)
        for i in range(0, KEYS, 100):
            chunk = keys[i:i + 100]
            c.send(b"get " + b" ".join(chunk) + b"\r\n")  # nutcracker knows no meta `mn`
            reply = c.read_until(b"END\r\n")
            expected = b"".join(b"VALUE %s 0 %d\r\n%s\r\n" % (k, len(values[k]), values[k])
                                for k in chunk) + b"END\r\n"
            assert reply == expected
        c.close()
    finally:
        if proxy is not None:
            proxy.terminate()
            proxy.wait(timeout=DEADLINE_S)
        for b in backends:
            b.stop()

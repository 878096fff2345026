"""Fixtures for pmcached's end-to-end tests: start a real server binary, talk to it over TCP.

The server under test is a command line taken from `--server` or the PMCACHED_SERVER environment
variable, e.g. "/path/to/pmcached --engine dram" or "/usr/bin/memcached -U 0". The fixtures add
`-p PORT -l 127.0.0.1` and any per-test flags (memcached's flag names: -c, -I, -A, -m, -t).
The differential test also starts a reference server, `--reference-server` or PMCACHED_REFERENCE
(default "/usr/bin/memcached -U 0").

Everything here waits on conditions with deadlines; nothing sleeps to synchronise.
"""

import errno
import faulthandler
import os
import pathlib
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

# The one parser of `pmcached --list-engines` (the registry is the one list of engines).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "scripts"))
import pmcached_engines  # noqa: E402

HOST = "127.0.0.1"
DEFAULT_REFERENCE = "/usr/bin/memcached -U 0"
START_DEADLINE_S = 20.0  # generous: sanitizer builds start slowly
STOP_DEADLINE_S = 10.0
IO_DEADLINE_S = 10.0
# No test of this suite takes this long unless something is stuck: the hang reporter below then
# prints where, before ctest's timeout kills the run and the evidence with it.
HANG_REPORT_S = float(os.environ.get("PMCACHED_HANG_REPORT_S", "240"))


def pytest_addoption(parser):
    parser.addoption("--server", default=os.environ.get("PMCACHED_SERVER"),
                     help="server-under-test command line (env PMCACHED_SERVER)")
    parser.addoption("--reference-server",
                     default=os.environ.get("PMCACHED_REFERENCE", DEFAULT_REFERENCE),
                     help="reference memcached command line (env PMCACHED_REFERENCE)")


def free_port():
    """A port that was free a moment ago (the kernel picks it; the caller retries on a race)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def listening_inodes(port):
    """Inodes of the sockets in LISTEN state on `port` (from /proc/net/tcp and tcp6)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add(fields[9])
        except FileNotFoundError:
            continue
    return inodes


def socket_inodes(pid):
    """Inodes of the sockets that process `pid` holds open."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[len("socket:["):-1])
    except FileNotFoundError:
        pass
    return inodes


def listens(pid, port):
    """True once process `pid` itself listens on `port` (not another process that took it)."""
    return bool(listening_inodes(port) & socket_inodes(pid))


def server_argv(command, port, extra_args, pool_path=None):
    argv = shlex.split(command)
    argv += ["-p", str(port), "-l", HOST]
    # pmcached on a persistent engine gets a fresh pool per start unless the test names one.
    extra = [str(a) for a in extra_args]
    if os.path.basename(argv[0]) == "pmcached" and pool_path is not None \
            and "--pool" not in argv and "--pool" not in extra:
        argv += ["--pool", str(pool_path)]
    # memcached refuses to run as root unless told which user to run as.
    if os.path.basename(argv[0]).startswith("memcached") and os.geteuid() == 0 \
            and "-u" not in argv:
        argv += ["-u", "root"]
    return argv + [str(a) for a in extra_args]


class ServerProcess:
    """One running server: its process, address and captured output."""

    def __init__(self, command, extra_args, log_path, cwd=None, fresh_pool=True):
        self.command = command
        self.extra_args = list(extra_args)
        self.log_path = log_path
        self.cwd = cwd
        self.fresh_pool = fresh_pool  # False: pmcached's default pool (data/ under cwd)
        self.proc = None
        self.port = None
        self.argv = None
        self.terminated = False
        self.killed = False  # set by kill(): the test crashed it on purpose
        self.stacks = None  # thread stacks taken before stop() had to kill it

    @property
    def address(self):
        return (HOST, self.port)

    @property
    def pid(self):
        return self.proc.pid

    def start(self):
        last_error = None
        for _attempt in range(3):  # the free port may be taken between probe and bind
            self.port = free_port()
            pool_path = f"{self.log_path}.pool" if self.fresh_pool else None
            self.argv = server_argv(self.command, self.port, self.extra_args, pool_path=pool_path)
            with open(self.log_path, "ab") as log:
                log.write(("$ " + shlex.join(self.argv) + "\n").encode())
                log.flush()
                self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT, start_new_session=True,
                                             cwd=self.cwd)
            try:
                self._await_listening()
                return self
            except RuntimeError as e:
                last_error = e
                self.stop()
                self.terminated = False
        raise RuntimeError(f"server did not start: {last_error}\n--- log ---\n{self.log_text()}")

    def _await_listening(self):
        # Waits until THIS process listens on the port: with tests running in parallel, another
        # server may grab the probed port first, and connecting alone would not notice.
        deadline = time.monotonic() + START_DEADLINE_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"exited with status {self.proc.returncode}")
            if listens(self.proc.pid, self.port):
                return
            time.sleep(0.01)  # polling interval of a deadline-bounded wait
        raise RuntimeError(f"not listening on {self.address} after {START_DEADLINE_S}s")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def wait_exit(self, timeout):
        """Waits for the process to exit by itself; returns its status or None on timeout."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def terminate(self):
        """Sends SIGTERM (once) if the process is still running."""
        if self.proc is not None and self.proc.poll() is None and not self.terminated:
            self.proc.send_signal(signal.SIGTERM)
            self.terminated = True

    def stop(self, deadline_s=STOP_DEADLINE_S):
        """SIGTERM, wait up to the deadline, then SIGKILL. Returns False if it had to kill."""
        if self.proc is None or self.proc.poll() is not None:
            return True
        self.terminate()
        try:
            self.proc.wait(timeout=deadline_s)
            return True
        except subprocess.TimeoutExpired:
            self.stacks = thread_stacks(self.proc.pid)
            self.proc.kill()
            self.proc.wait(timeout=STOP_DEADLINE_S)
            return False

    def kill(self):
        """SIGKILL: a simulated crash. The reaper does not count this exit as a problem."""
        self.killed = True
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=STOP_DEADLINE_S)

    def rss_kib(self):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def log_text(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return ""


class ConnectionClosed(AssertionError):
    pass


class RawConn:
    """A plain TCP client. Every read has a deadline; a missed deadline fails the test."""

    def __init__(self, address, timeout=IO_DEADLINE_S):
        self.sock = socket.create_connection(address, timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.buf = b""

    def close(self):
        self.sock.close()

    def send(self, data):
        self.sock.sendall(data)

    def fill(self, deadline):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout()
        self.sock.settimeout(remaining)
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionClosed(f"connection closed; unread: {self.buf[:300]!r}")
        self.buf += chunk

    def read_exact(self, n, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        try:
            while len(self.buf) < n:
                self.fill(deadline)
        except socket.timeout:
            raise AssertionError(f"timed out waiting for {n} bytes; got {len(self.buf)}: "
                                 f"{self.buf[:300]!r}") from None
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_until(self, terminator, timeout=None):
        """Reads until the received bytes end with `terminator` (after a whole recv)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        try:
            while not self.buf.endswith(terminator):
                self.fill(deadline)
        except socket.timeout:
            raise AssertionError(f"timed out waiting for {terminator!r}; got "
                                 f"{self.buf[-300:]!r}") from None
        out, self.buf = self.buf, b""
        return out

    def read_line(self, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        try:
            while b"\n" not in self.buf:
                self.fill(deadline)
        except socket.timeout:
            raise AssertionError(f"timed out waiting for a line; got {self.buf[:300]!r}") \
                from None
        line, _, self.buf = self.buf.partition(b"\n")
        return line + b"\n"

    def expect(self, expected, timeout=None):
        got = self.read_exact(len(expected), timeout)
        assert got == expected
        return got

    def request(self, data, timeout=None):
        """Sends `data` followed by `mn` and returns every reply byte before the final MN."""
        self.send(data + b"mn\r\n")
        reply = self.read_until(b"MN\r\n", timeout)
        return reply[:-len(b"MN\r\n")]

    def closed_by_peer(self, timeout=None):
        """True once the server closes the connection (EOF or reset), False at the deadline.
        Bytes that arrive first are kept in self.buf."""
        deadline = time.monotonic() + (timeout or self.timeout)
        try:
            while True:
                self.fill(deadline)
        except ConnectionClosed:
            return True
        except OSError as e:
            if isinstance(e, socket.timeout):
                return False
            if e.errno in (errno.ECONNRESET, errno.EPIPE):
                return True
            raise


def thread_stacks(pid):
    """Every thread's stack of a live process, through gdb: what a server that ignores SIGTERM
    is doing. A note instead if gdb is missing or cannot attach."""
    gdb = shutil.which("gdb")
    if gdb is None:
        return "(no gdb on PATH: thread stacks not taken)"
    try:
        result = subprocess.run([gdb, "-p", str(pid), "-batch", "-nx", "-ex", "thread apply all bt"],
                                stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                timeout=120)
    except subprocess.TimeoutExpired:
        return "(gdb did not finish within 120 s)"
    return result.stdout + result.stderr


def child_pids(parent):
    """The live processes whose parent is `parent`."""
    pids = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                # The command in parentheses may hold spaces: the fields after it are fixed.
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent and fields[0] != "Z":
            pids.add(int(entry))
    return pids


def process_command(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return shlex.join(a.decode(errors="replace") for a in f.read().split(b"\0") if a)
    except OSError:
        return "?"


def task_states(pid):
    """Per thread: its state, the kernel function it sleeps in and its signal masks (pending,
    blocked, caught): why a process would not act on a signal."""
    lines = []
    try:
        tasks = sorted(os.listdir(f"/proc/{pid}/task"), key=int)
    except OSError:
        return "(no /proc entry)\n"
    for tid in tasks:
        base = f"/proc/{pid}/task/{tid}"
        try:
            with open(f"{base}/wchan") as f:
                wchan = f.read().strip()
            with open(f"{base}/status") as f:
                status = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
        except OSError:
            continue
        fields = " ".join(f"{k}={status.get(k, '?').strip()}"
                          for k in ("Name", "State", "SigPnd", "ShdPnd", "SigBlk", "SigCgt"))
        lines.append(f"task {tid}: {fields} wchan={wchan}")
    return "\n".join(lines) + "\n"


class HangReporter:
    """Prints, to the stderr pytest started with (ctest keeps it even when it kills the run on
    its timeout), every Python thread's stack and the thread states and gdb stacks of every
    server still running (with its log tail) and of every other child process, when a test or
    the session's end has run for HANG_REPORT_S."""

    def __init__(self):
        self.stream = None

    def open(self):
        # pytest_configure runs while output capture is suspended: fd 2 is the real stderr.
        self.stream = open(os.dup(sys.stderr.fileno()), "w")

    def close(self):
        if self.stream is not None:
            self.stream.close()
            self.stream = None

    def watch(self, what, servers):
        """Starts a timer for `what`; servers() lists the ServerProcesses to report. Returns the
        timer, to be cancelled when `what` is done."""
        timer = threading.Timer(HANG_REPORT_S, self.report, (what, servers))
        timer.daemon = True
        timer.start()
        return timer

    def report(self, what, servers):
        out = self.stream
        if out is None:
            return
        out.write(f"\n==== hang report: {what} still running after {HANG_REPORT_S:.0f} s\n")
        out.write("---- Python threads of the test run\n")
        out.flush()
        faulthandler.dump_traceback(file=out, all_threads=True)
        reported = set()
        for server in servers():
            if not server.alive():
                continue
            reported.add(server.pid)
            out.write(f"---- server pid {server.pid}: {shlex.join(server.argv)}\n")
            out.write(task_states(server.pid) + thread_stacks(server.pid))
            out.write("---- its log, last 3000 characters\n" + server.log_text()[-3000:] + "\n")
            out.flush()
        # Processes a test started by itself, outside server_factory.
        for pid in child_pids(os.getpid()) - reported:
            out.write(f"---- child pid {pid}: {process_command(pid)}\n")
            out.write(task_states(pid) + thread_stacks(pid))
            out.flush()
        out.write("==== end of hang report\n")
        out.flush()


HANGS = HangReporter()


def pytest_configure(config):
    HANGS.open()


def pytest_unconfigure(config):
    HANGS.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    timer = HANGS.watch(item.nodeid, lambda: list(getattr(item, "pmcached_servers", [])))
    try:
        yield
    finally:
        timer.cancel()


class Reaper:
    """Servers a test has finished with. Teardown only sends SIGTERM (memcached takes about a
    second to exit, which would dominate the suite's time); the session's end waits for each
    with a deadline, SIGKILLs stragglers, and fails the run if a server did not exit cleanly
    (status 0) on SIGTERM -- a crash or sanitizer report at shutdown is not lost."""

    def __init__(self):
        self.pending = []   # (test id, ServerProcess)
        self.problems = []

    def add(self, test_id, server):
        status = server.proc.poll() if server.proc is not None else None
        if status not in (None, 0) and not server.killed:
            self.problems.append((test_id, f"exited during the test with status {status}",
                                  server.log_text()[-5000:]))
        server.terminate()
        # The fresh pool each start got (64 MB, allocated on disk) goes now: the test is over,
        # and hundreds of them would fill the disk. Unlinked while the server may still map it,
        # its space is freed when the process exits. Pools a test names are its own business.
        pathlib.Path(f"{server.log_path}.pool").unlink(missing_ok=True)
        self.pending.append((test_id, server))

    def finish(self):
        deadline = time.monotonic() + STOP_DEADLINE_S
        for test_id, server in self.pending:
            if not server.terminated:
                continue  # exited on its own (e.g. `shutdown`); its test judged that
            remaining = max(0.1, deadline - time.monotonic())
            killed = not server.stop(deadline_s=remaining)
            status = server.proc.returncode
            if killed or status != 0:
                why = "did not exit on SIGTERM; killed" if killed else f"exit status {status}"
                report = server.log_text()[-5000:]
                if server.stacks:
                    report += "\n---- its threads before the kill (gdb) ----\n" + server.stacks
                self.problems.append((test_id, why, report))
        self.pending = []


REAPER = Reaper()


def pytest_sessionfinish(session, exitstatus):
    timer = HANGS.watch("stopping the servers at the session's end",
                        lambda: [server for _, server in REAPER.pending])
    try:
        REAPER.finish()
    finally:
        timer.cancel()
    if REAPER.problems and session.exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter):
    for test_id, why, log in REAPER.problems:
        terminalreporter.section(f"server stopped badly after {test_id}: {why}", red=True)
        terminalreporter.write_line(log)


@pytest.fixture(scope="session")
def server_command(request):
    command = request.config.getoption("--server")
    if not command:
        pytest.fail("no server under test: set PMCACHED_SERVER or pass --server "
                    "(e.g. PMCACHED_SERVER='/usr/bin/memcached -U 0')")
    return command


@pytest.fixture(scope="session")
def pmcached_binary(server_command):
    """The pmcached executable of the server under test; skips the test for another server."""
    executable = shlex.split(server_command)[0]
    if not os.path.basename(executable).startswith("pmcached"):
        pytest.skip(f"needs pmcached, not {executable}")
    return executable


@pytest.fixture(scope="session")
def registered_engines(pmcached_binary):
    """The engines the pmcached under test registers, in registry order (`--list-engines`):
    pmcached_engines.Engine(name, persistent, description)."""
    return pmcached_engines.registered_engines(pmcached_binary)


@pytest.fixture(scope="session")
def reference_command(request):
    command = request.config.getoption("--reference-server")
    executable = shlex.split(command)[0]
    if not os.access(executable, os.X_OK):
        pytest.skip(f"reference server {executable} not installed")
    return command


@pytest.fixture
def server_factory(request, server_command, tmp_path):
    """start(*extra_flags, command=None, cwd=None, fresh_pool=True) -> a running ServerProcess;
    all are stopped at teardown. The output of each is written to a file and shown when the test
    fails. fresh_pool=False leaves pmcached on its default pool (data/pmcached.pool under cwd)."""
    started = []
    request.node.pmcached_servers = started

    def start(*extra_args, command=None, cwd=None, fresh_pool=True):
        log_path = tmp_path / f"server-{len(started)}.log"
        server = ServerProcess(command or server_command, extra_args, log_path, cwd=cwd,
                               fresh_pool=fresh_pool)
        started.append(server)
        return server.start()

    yield start
    for server in started:
        REAPER.add(request.node.nodeid, server)


@pytest.fixture
def server_process(server_factory):
    return server_factory()


@pytest.fixture
def server(server_process):
    """(host, port) of a fresh server under test with default flags."""
    return server_process.address


@pytest.fixture
def connect():
    """connect(address) -> RawConn; all are closed at teardown."""
    conns = []

    def make(address, timeout=IO_DEADLINE_S):
        conn = RawConn(address, timeout)
        conns.append(conn)
        return conn

    yield make
    for conn in conns:
        conn.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for i, server in enumerate(getattr(item, "pmcached_servers", [])):
            status = ("not started" if server.proc is None else
                      "running" if server.alive() else f"exited {server.proc.returncode}")
            report.sections.append((f"server {i} log ({status})", server.log_text()[-20000:]))

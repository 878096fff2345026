#!/usr/bin/python3
"""Checks malformed_cases.txt against a real memcached (the spec for pmcached's parser).

Each case is sent on a fresh connection followed by "mn\\r\\n"; memcached's whole answer
must be the case's expected reply followed by "MN\\r\\n".

Usage: verify_cases_against_memcached.py [--port PORT]   (without --port it starts
/usr/bin/memcached on a free port and stops it afterwards). Exit status 0 = all match.
"""
import argparse
import os
import socket
import subprocess
import sys
import time

CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "malformed_cases.txt")


def unescape(text):
    out = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if text.startswith("{{", i) and i + 3 < len(text) and text[i + 3] == "*":
            close = text.find("}}", i)
            out += text[i + 2].encode() * int(text[i + 4:close])
            i = close + 2
            continue
        if c == "\\" and i + 1 < len(text):
            e = text[i + 1]
            if e == "x":
                out.append(int(text[i + 2:i + 4], 16))
                i += 4
                continue
            out += {"r": b"\r", "n": b"\n", "t": b"\t"}.get(e, e.encode())
            i += 2
            continue
        out += c.encode()
        i += 1
    return bytes(out)


def load_cases():
    cases = []
    with open(CASES, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            source, expected = line.split("\t")
            cases.append((source, unescape(source), unescape(expected)))
    return cases


def ask(port, data, want):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(data)
        s.settimeout(2.0)
        got = b""
        try:
            while not got.endswith(want[-4:]) or len(got) < len(want):
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
        except socket.timeout:
            pass
        return got


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int)
    args = parser.parse_args()
    server = None
    port = args.port
    if port is None:
        port = free_port()
        command = ["/usr/bin/memcached", "-p", str(port), "-U", "0", "-l", "127.0.0.1"]
        if os.geteuid() == 0:
            command += ["-u", "nobody"]
        server = subprocess.Popen(command)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                time.sleep(0.05)
    failures = 0
    cases = load_cases()
    try:
        for source, data, expected in cases:
            want = expected + b"MN\r\n"
            got = ask(port, data + b"mn\r\n", want)
            if got != want:
                failures += 1
                print(f"MISMATCH {source[:100]!r}: expected {want[:200]!r}, got {got[:200]!r}")
    finally:
        if server is not None:
            server.terminate()
            server.wait()
    print(f"{len(cases) - failures}/{len(cases)} cases match memcached")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

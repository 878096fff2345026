#!/usr/bin/python3
# A measurement helper, not a test: loads N 8-byte big-endian integer keys into a running pmcached
# (Dense 1..N, Sparse uniform 64-bit, or Clustered runs of 64 at random bases; random order), as
# seed 002 ch. 4 does, through meta ms with base64 keys, pipelined; then prints `stats engine`.
#   scripts/load-keys.py HOST PORT N dense|sparse|clustered
import base64, random, socket, sys
host, port, n, dist = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rng = random.Random(42)
if dist == "dense":
    keys = list(range(1, n + 1))
elif dist == "sparse":
    keys = list({rng.getrandbits(64) for _ in range(n)})
else:
    keys = []
    while len(keys) < n:
        base = rng.getrandbits(64) & ~63
        keys.extend(base + i for i in range(64))
    keys = keys[:n]
rng.shuffle(keys)
s = socket.create_connection((host, port))
batch = []
for i, k in enumerate(keys):
    b = base64.b64encode(k.to_bytes(8, "big"))
    batch.append(b"ms " + b + b" 1 b q\r\nx\r\n")
    if len(batch) == 2000 or i == len(keys) - 1:
        s.sendall(b"".join(batch) + b"mn\r\n")
        buf = b""
        while not buf.endswith(b"MN\r\n"):
            buf += s.recv(1 << 16)
        if buf != b"MN\r\n":
            raise SystemExit("unexpected reply: %r" % buf[:200])
        batch = []
s.sendall(b"stats engine\r\n")
buf = b""
while not buf.endswith(b"END\r\n"):
    buf += s.recv(1 << 16)
print(buf.decode())

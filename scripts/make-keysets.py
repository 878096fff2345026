#!/usr/bin/env python3
"""The three key sets of seed 004 §4.2 (URL, Wikipedia-title and Random strings), built locally
from Debian files (no downloads), for bench/store_bench --key-file (scripts/evaluate_b2tree.py).

  make-keysets.py --n N [--seed S] [--sets url,title,random] --out DIR [--stats-csv FILE]

Writes DIR/<set>.keys: N distinct keys, one per line, in a shuffled order. Every key is 1..250
bytes that a memcached text key may hold: no space, no control character (no byte <= 0x20, no
0x7f); bytes >= 0x80 are allowed (UTF-8 letters of the word lists, the Random set's high bytes).
Deterministic for a seed, a list of installed packages and the word lists' versions.

How each set is made (all randomness from random.Random(seed, set)):
  url     scheme://host/path. Scheme: https 70%, http 28%, ftp 2%. Hosts: N/200 (at least 10),
          each a subdomain (www, en, docs, ...), one or two ASCII words of the word lists joined
          by "-" or nothing, and a top-level domain; a URL picks host number H*u^3 (u uniform in
          [0,1)), so a few hosts hold many URLs and their keys share long prefixes, as crawled
          URLs do. Path: half the time a file path of an installed package
          (/var/lib/dpkg/info/*.list, e.g. /usr/share/doc/zstd/changelog.gz), else 1-4 segments
          of words (percent-encoded UTF-8) ending in "/", ".html", ".php?id=<n>" or nothing.
  title   Wikipedia titles with underscores from the words of wamerican and wbritish: a single
          capitalised word (25%), "List_of_<words>", "<Word>_(disambiguation|film|album|...)",
          "<year>_in_<word>", "History_of_<word>", two capitalised words (a name), or a phrase
          of 2-5 words with the first capitalised.
  random  seed 004's Random set: two distributions, one for the length (normal, mean 24,
          standard deviation 8, clamped to 1..250) and one for every byte (uniform over the 222
          bytes a key may hold: 0x21-0x7e and 0x80-0xff).
A key longer than 250 bytes or already drawn is drawn again.

Prints seed 004's Table 1 per set: keys, mean and maximum length, and the mean common prefix of
neighbours in sorted order (of each key with the next); --stats-csv writes the same as CSV.
"""
import argparse
import csv
import glob
import os
import random
import sys
import urllib.parse

MAX_KEY = 250
WORD_LISTS = ("/usr/share/dict/american-english", "/usr/share/dict/british-english")
SETS = ("url", "title", "random")


def allowed(key):
    return 1 <= len(key) <= MAX_KEY and all(b > 0x20 and b != 0x7F for b in key)


def read_words():
    words = set()
    for path in WORD_LISTS:
        if not os.path.exists(path):
            sys.exit(f"make-keysets: {path} is missing (apt-get install wamerican wbritish; "
                     "scripts/install-deps.sh installs them)")
        with open(path, encoding="utf-8") as f:
            words.update(w for w in (line.strip() for line in f) if w and " " not in w)
    return sorted(words)


def read_package_paths():
    paths = set()
    for path in sorted(glob.glob("/var/lib/dpkg/info/*.list")):
        with open(path, "rb") as f:
            paths.update(p for p in (line.rstrip(b"\n") for line in f)
                         if p.count(b"/") >= 2 and allowed(p))
    return sorted(paths)


class Url:
    SUBDOMAINS = ("www", "en", "de", "docs", "blog", "shop", "news", "api", "m", "static",
                  "wiki", "forum", "mail", "dev", "cdn")
    TLDS = ("com", "org", "net", "de", "co.uk", "io", "edu", "gov", "info", "fr", "jp", "nl")
    ENDINGS = ("/", ".html", ".php", "", "", "/index.html")

    def __init__(self, rng, n, words, paths):
        self.rng, self.paths = rng, paths
        self.ascii = [w.lower() for w in words if w.isascii() and w.isalpha()]
        self.words = words
        self.hosts = [self.host() for _ in range(max(10, n // 200))]

    def host(self):
        r = self.rng
        name = r.choice(("", "-")).join(r.choice(self.ascii) for _ in range(r.randint(1, 2)))
        return f"{r.choice(self.SUBDOMAINS)}.{name}.{r.choice(self.TLDS)}"

    def scheme(self):
        u = self.rng.random()
        return "https" if u < 0.70 else "http" if u < 0.98 else "ftp"

    def path(self):
        r = self.rng
        if self.paths and r.random() < 0.5:
            return r.choice(self.paths).decode("utf-8", "replace")
        segments = [urllib.parse.quote(r.choice(self.words), safe="'")
                    for _ in range(r.randint(1, 4))]
        ending = r.choice(self.ENDINGS)
        if ending == ".php":
            ending += f"?id={r.randint(1, 99999)}"
        return "/" + "/".join(segments) + ending

    def __call__(self):
        host = self.hosts[int(len(self.hosts) * self.rng.random() ** 3)]
        return f"{self.scheme()}://{host}{self.path()}".encode()


class Title:
    QUALIFIERS = ("disambiguation", "film", "album", "song", "band", "novel", "surname",
                  "river", "ship", "company", "video_game", "TV_series")
    TOPICS = ("music", "film", "sports", "science", "literature", "aviation", "politics")

    def __init__(self, rng, words):
        self.rng, self.words = rng, words

    def cap(self, word):
        return word[:1].upper() + word[1:]

    def phrase(self, lo, hi):
        return "_".join(self.rng.choice(self.words) for _ in range(self.rng.randint(lo, hi)))

    def __call__(self):
        r, cap, word = self.rng, self.cap, self.rng.choice(self.words)
        u = r.random()
        if u < 0.25:
            title = cap(word)
        elif u < 0.35:
            title = "List_of_" + self.phrase(1, 3)
        elif u < 0.45:
            title = f"{cap(word)}_({r.choice(self.QUALIFIERS)})"
        elif u < 0.52:
            title = f"{r.randint(1500, 2023)}_in_{r.choice(self.TOPICS + (word,))}"
        elif u < 0.57:
            title = "History_of_" + cap(word)
        elif u < 0.75:
            title = f"{cap(word)}_{cap(r.choice(self.words))}"
        else:
            title = cap(word) + "_" + self.phrase(1, 4)
        return title.encode()


class RandomKey:
    BYTES = bytes(list(range(0x21, 0x7F)) + list(range(0x80, 0x100)))

    def __init__(self, rng):
        self.rng = rng

    def __call__(self):
        length = max(1, min(MAX_KEY, round(self.rng.gauss(24, 8))))
        return bytes(self.rng.choices(self.BYTES, k=length))


def make(kind, n, seed, words, paths):
    rng = random.Random(f"{seed}/{kind}")
    draw = {"url": lambda: Url(rng, n, words, paths), "title": lambda: Title(rng, words),
            "random": lambda: RandomKey(rng)}[kind]()
    keys, seen, attempts = [], set(), 0
    while len(keys) < n:
        attempts += 1
        if attempts > 20 * n + 1000:
            sys.exit(f"make-keysets: cannot draw {n} distinct {kind} keys")
        key = draw()
        if allowed(key) and key not in seen:
            seen.add(key)
            keys.append(key)
    rng.shuffle(keys)
    return keys


def common_prefix(a, b):
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def table1(keys):
    """Seed 004's Table 1: keys, mean and max length, mean LCP of sorted neighbours."""
    ordered = sorted(keys)
    lcp = [common_prefix(a, b) for a, b in zip(ordered, ordered[1:])]
    return {"keys": len(keys), "mean_length": sum(map(len, keys)) / len(keys),
            "max_length": max(map(len, keys)),
            "mean_common_prefix": sum(lcp) / len(lcp) if lcp else 0.0}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, required=True, help="keys per set")
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--out", required=True, help="directory for <set>.keys")
    parser.add_argument("--stats-csv", help="write Table 1 here")
    args = parser.parse_args()
    sets = [s for s in args.sets.split(",") if s]
    if args.n < 1 or any(s not in SETS for s in sets):
        sys.exit(f"make-keysets: --n >= 1 and --sets from {','.join(SETS)}")
    os.makedirs(args.out, exist_ok=True)
    words = read_words()
    paths = read_package_paths() if "url" in sets else []
    rows = []
    print(f"{'set':8} {'keys':>9} {'mean len':>9} {'max len':>8} {'mean LCP':>9}")
    for kind in sets:
        keys = make(kind, args.n, args.seed, words, paths)
        with open(os.path.join(args.out, f"{kind}.keys"), "wb") as f:
            f.write(b"\n".join(keys) + b"\n")
        t = table1(keys)
        rows.append({"set": kind, **t})
        print(f"{kind:8} {t['keys']:9} {t['mean_length']:9.1f} {t['max_length']:8} "
              f"{t['mean_common_prefix']:9.1f}", flush=True)
    if args.stats_csv:
        with open(args.stats_csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["set", "keys", "mean_length", "max_length",
                                              "mean_common_prefix"])
            w.writeheader()
            for r in rows:
                w.writerow({**r, "mean_length": f"{r['mean_length']:.1f}",
                            "mean_common_prefix": f"{r['mean_common_prefix']:.1f}"})
    if not paths and "url" in sets:
        print("make-keysets: no /var/lib/dpkg/info/*.list: URL paths from words only",
              file=sys.stderr)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Checks that #include lines respect the layers (README, "Layout"); exits 1 listing violations.

    scripts/check_layers.py [ROOT]

The layers, lowest first: engine/pm; the engine interface (engine/*.h); the engines (engine/dram,
wort, art, radix, btree, fptree, wbtree, nvtree) and their registry; the store (engine/store);
the front door (engine/open_store.h); protocol, config; server. CMake's targets keep the link
lines apart; this keeps the includes apart, which the compiler does not (one include root).
"""
import pathlib
import re
import sys

ENGINE_DIRS = ("dram", "wort", "art", "radix", "btree", "fptree", "wbtree", "nvtree", "bptree")
ENGINES = tuple(f"engine/{d}/" for d in ENGINE_DIRS)
REGISTRY = "engine/engine_registry.h"
FRONT_DOOR = "engine/open_store.h"

# (files whose path starts with, include prefixes they must not use, why)
RULES = [
    ("engine/pm/", ("engine/",), "pm knows nothing of items or engines",
     ("engine/pm/",)),
    ("engine/buffer/", ("engine/",), "the buffer layer knows nothing of items or engines",
     ("engine/pm/", "engine/buffer/")),
    ("engine/store/", ENGINES + (REGISTRY, FRONT_DOOR), "the store knows no engine", ()),
    (ENGINES, ("engine/store/", REGISTRY, FRONT_DOOR, "server/", "protocol/"),
     "engines know no store, registry or server", ()),
    ("protocol/", ("engine/", "server/"), "protocol/ does no I/O and knows no store", ()),
    ("config/", ("engine/", "server/", "protocol/"), "config knows only options", ()),
    ("server/", ("engine/pm/", "engine/buffer/") + ENGINES + (REGISTRY,),
     "the server reaches the store through open_store only", ("engine/buffer/buffer_types.h",)),
]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(root: pathlib.Path):
    """The .h/.cc files of the source folders; build trees (which tests write into while this
    runs) are never walked."""
    for top in ("engine", "protocol", "config", "server"):
        for path in sorted((root / top).rglob("*")):
            if path.suffix in (".h", ".cc"):
                yield path


def violations(root: pathlib.Path):
    for path in sources(root):
        rel = path.relative_to(root).as_posix()
        for where, banned, why, allowed in RULES:
            if not rel.startswith(where):
                continue
            for included in INCLUDE.findall(path.read_text(errors="replace")):
                if included.startswith(banned) and not included.startswith(allowed):
                    yield f"{rel}: includes {included} ({why})"


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[1])
    found = list(violations(root))
    for line in found:
        print(line, file=sys.stderr)
    if found:
        print(f"check_layers: {len(found)} include(s) cross a layer", file=sys.stderr)
        return 1
    print("check_layers: every include respects the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())

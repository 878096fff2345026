"""The engines a pmcached binary registers, as `pmcached --list-engines` prints them.

The registry (engine/engine_registry.cc) is the one list of engines: the scripts and the
integration tests (tests/integration/conftest.py) ask the binary instead of keeping a list.
Each line is "NAME persistent|volatile DESCRIPTION".
"""

import collections
import subprocess

Engine = collections.namedtuple("Engine", "name persistent description")


def registered_engines(pmcached):
    """[Engine, ...] in registry order; `pmcached` is the binary's path."""
    result = subprocess.run([str(pmcached), "--list-engines"], capture_output=True, text=True,
                            timeout=30, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{pmcached} --list-engines exited {result.returncode}: "
                           f"{result.stderr.strip()}")
    engines = []
    for line in result.stdout.splitlines():
        fields = line.split(" ", 2)
        if len(fields) < 3 or fields[1] not in ("persistent", "volatile"):
            raise RuntimeError(f"{pmcached} --list-engines: unexpected line {line!r}")
        engines.append(Engine(fields[0], fields[1] == "persistent", fields[2]))
    if not engines:
        raise RuntimeError(f"{pmcached} --list-engines printed no engine")
    return engines


def engine_names(pmcached, persistent_only=False):
    """The registered engines' names, comma-separated (the scripts' --engines syntax)."""
    return ",".join(e.name for e in registered_engines(pmcached)
                    if e.persistent or not persistent_only)

"""What the tree tests share: where the trees and their drivers are, building them once, running a
driver, a tree's sources and seeded-bug catalog, and the plain dict model of the functional tests.

The session fixture `trees_built` (tests/conftest.py) builds through `build_trees` here. Crash
exploration of a tree's history is in tests/crashutil.py.
"""
from __future__ import annotations

import fcntl
import functools
import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREES_DIR = ROOT / "build" / "trees"
U64 = (1 << 64) - 1


@functools.lru_cache(maxsize=None)
def build_trees() -> tuple[bool, str]:
    """`make -s trees`, once per test process; a file lock keeps parallel workers (pytest -n) from
    building the same binaries at once. Returns (success, make's output)."""
    (ROOT / "build").mkdir(exist_ok=True)
    with open(ROOT / "build" / ".trees.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        res = subprocess.run(["make", "-s", "trees"], cwd=ROOT, capture_output=True, text=True)
    return res.returncode == 0, res.stdout + res.stderr


def run_driver(driver: Path, args: list[str], stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([str(driver), *args], input=stdin, capture_output=True, text=True, timeout=120)


def shared_folders(tree: str) -> list[str]:
    """The shared folders of trees/ that TREE names in its shared.txt (see trees/build.mk)."""
    path = ROOT / "trees" / tree / "shared.txt"
    if not path.exists():
        return []
    return [d for d in (line.split("#")[0].strip() for line in path.read_text().splitlines()) if d]


def tree_sources(tree: str) -> str:
    """The text of every .c file compiled into TREE's drivers but trees/common's: its own folder
    and its shared folders."""
    return "".join(p.read_text() for d in [tree, *shared_folders(tree)]
                   for p in sorted((ROOT / "trees" / d).glob("*.c")))


def catalog(tree: str) -> list[dict]:
    """TREE's seeded bugs (trees/<tree>/bugs.json)."""
    return json.loads((ROOT / "trees" / tree / "bugs.json").read_text())


def key(*head: int, low: int = 0) -> int:
    """A u64 key from its leading bytes (big-endian) plus LOW in the last bytes."""
    k = 0
    for b in head:
        k = k << 8 | b
    return (k << 8 * (8 - len(head))) | low


@dataclass
class Model:
    """The functional tests' reference: an ordered map of u64 -> u64 and the result line of each
    operation (the crash tests judge with specs/ instead, see tests/crashutil.py)."""
    data: dict[int, int] = field(default_factory=dict)

    def apply(self, line: str) -> str:
        op, *args = line.split()
        key = int(args[0])
        if op == "insert":
            if key in self.data:
                return "exists"
            self.data[key] = int(args[1])
            return "ok"
        if op == "update":
            if key not in self.data:
                return "notfound"
            self.data[key] = int(args[1])
            return "ok"
        if op == "delete":
            return "ok" if self.data.pop(key, None) is not None else "notfound"
        if op == "lookup":
            return f"value {self.data[key]}" if key in self.data else "notfound"
        if op == "scan":
            found = sorted(k for k in self.data if k >= key)[: int(args[1])]
            return " ".join(["scan"] + [f"{k} {self.data[k]}" for k in found])
        raise AssertionError(op)

"""What the tree tests share: where the trees and their drivers are, building them once, running a
driver, a tree's sources and seeded-bug catalog.

The session fixture `trees_built` (tests/conftest.py) builds through `build_trees` here. The dict
model of the functional tests is tests/dict_model.py; crash exploration of a tree's history is in
tests/crashutil.py.
"""
from __future__ import annotations

import fcntl
import functools
import json
import subprocess
from pathlib import Path

from crashcheck.harness.target import toolchain

ROOT = Path(__file__).resolve().parent.parent
# the clang the pass was built for (build/toolchain.env): native test programs use it too
CLANG = toolchain.current().clang
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


def seeded_bugs(path) -> list[dict]:
    """The seeded bugs of the catalog PATH (a bugs.json), one per variant: its many-bug variants
    (entries naming "bugs", docs/trees.md "Many bugs at once") left out."""
    return [b for b in json.loads(Path(path).read_text()) if "bugs" not in b]


def catalog(tree: str) -> list[dict]:
    """TREE's seeded bugs (trees/<tree>/bugs.json), its many-bug variants left out."""
    return seeded_bugs(ROOT / "trees" / tree / "bugs.json")


def key(*head: int, low: int = 0) -> int:
    """A u64 key from its leading bytes (big-endian) plus LOW in the last bytes."""
    k = 0
    for b in head:
        k = k << 8 | b
    return (k << 8 * (8 - len(head))) | low

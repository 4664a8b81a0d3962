"""Source paths as people on other machines can read them.

Owns how a bug record names source files: relative to the project root (crashcheck's own folder,
for the built-in structures) or to the folder crashcheck ran in (a user's source root), whichever
holds the file; a file under neither keeps its absolute name. Debug info may name one file
several ways (`trees/artcow/../woart/x.c`): names are normalised first (crashsim/trace.py reads
them that way). Records read the source text while the absolute names are still at hand
(harness/triage/records.py), and only then pass through `relative_record`; `source` says which
file a name is to read it. Never reads files.
"""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# crashcheck's own built parts (pass, runtime, runner, built-in trees, the supervisor's shield):
# $CRASHCHECK_BUILD, or the installation's build/. An empty CRASHCHECK_BUILD= is unset, not the
# current folder.
BUILD = Path(os.environ.get("CRASHCHECK_BUILD") or ROOT / "build")
# Sources whose functions are helpers: a store, flush or fence inside one inlined into the
# structure's code is named by the line that called it (grouping, the report's source boxes).
HEADERS = (".h", ".hh", ".hpp")
# Fields of a record that name files for the machine that ran it (the replay command takes a
# path the user typed) and are left as they are.
KEEP = frozenset({"replay"})


def roots() -> list[str]:
    """The folders names are made relative to: the project root first (a run from one of its
    subfolders still names trees/wort/wort.c), then the folder crashcheck runs in."""
    out = [str(ROOT)]
    cwd = os.path.normpath(os.getcwd())
    if cwd not in out and cwd != os.sep:
        out.append(cwd)
    return out


def source(name: str) -> Path:
    """The file to read for the source name NAME: NAME itself, except a relative name not found from
    the current folder that the project root holds. A pip-installed crashcheck compiles its
    built-in structures with names relative to the folder it was built from (CMakeLists.txt), which
    may be gone; the same files are installed under the root."""
    p = Path(name)
    if not p.is_absolute() and not p.exists() and (ROOT / p).is_file():
        return ROOT / p
    return p


def display(name: str, rs: list[str] | None = None) -> str:
    """NAME normalised, relative to the first root that holds it (else as it is)."""
    if not name:
        return name
    name = os.path.normpath(name)
    for r in rs or roots():
        if name.startswith(r + os.sep):
            return name[len(r) + 1:]
    return name


def _text(s: str, prefixes: list[str]) -> str:
    for p in prefixes:
        if p in s:
            s = s.replace(p, "")
    return s


def relative_record(record: dict, rs: list[str] | None = None) -> dict:
    """RECORD (a bug record, docs/bug-record.md) with every absolute file name under a root made
    relative: site `file` fields, the keys of `sources`, and names inside texts (group, sites,
    detail). Returns a new dict; RECORD is not changed."""
    prefixes = [r + os.sep for r in rs or roots()]

    def walk(v, key=None):
        if key in KEEP:
            return v
        if isinstance(v, dict):
            return {(_text(k, prefixes) if isinstance(k, str) else k): walk(x, k) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, str):
            return display(v, rs) if key in ("file",) else _text(v, prefixes)
        return v
    return walk(record)


__all__ = ["BUILD", "HEADERS", "ROOT", "display", "relative_record", "roots", "source"]

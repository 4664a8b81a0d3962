"""The structures crashcheck knows: built-in trees and users' own, with their drivers and catalogs.

Owns name -> driver binaries, seeded-bug catalog (bugs.json), expectation file (expect.json) and
key kind. Built-in structures are the folders trees/<name>/ with an adapter.c, built by
`make trees` into build/trees/<name>/ (driver, driver-native, driver-bug-<bug>). A user's
structure is built by `crashcheck build` into a folder of builds (./crashcheck-builds by
default, or --out DIR) as <name>/ with a meta.json beside it; `user_build_folders` is the order
every command looks for it in (docs/cli.md "Where builds are").
Never runs a driver except `driver info` (cached).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from crashcheck.harness.core import paths
from crashcheck.harness.core.errors import UsageError
from crashcheck.harness.core.schema import REQUIRED, Bool, List, Nat, Obj, Opt, SchemaError, Text
from crashcheck.harness.core.user_files import read_json
from crashcheck.specs.oracle import CLASSES, CONCURRENT_CLASSES
from crashcheck.specs.ordered_map import parse_token

ROOT = Path(__file__).resolve().parents[2]
BUILD = paths.BUILD     # crashcheck's own built parts ($CRASHCHECK_BUILD, or the installation's build/)
USER_BUILDS = "crashcheck-builds"     # the folder of builds `crashcheck build` writes under the current one


def user_build_folders() -> list[Path]:
    """The folders holding users' builds (each build a NAME/ with meta.json), in the order a name
    is looked for: those of $CRASHCHECK_BUILDS (colon-separated; where `crashcheck build --out`
    wrote), ./crashcheck-builds of the current folder (where `crashcheck build` writes by
    default), then the installation's build/user (builds made there before)."""
    given = [Path(p).expanduser() for p in os.environ.get("CRASHCHECK_BUILDS", "").split(":") if p.strip()]
    folders = [*given, Path.cwd() / USER_BUILDS, BUILD / "user"]
    return list(dict.fromkeys(p.resolve() if p.exists() else p for p in folders))


def user_build(name: str) -> Path | None:
    """The build folder of the user's structure NAME, the first in user_build_folders' order."""
    for folder in user_build_folders():
        if (folder / name / "meta.json").is_file():
            return folder / name
    return None
MODELS = ("adr", "eadr")


@dataclass(frozen=True)
class SeededBug:
    name: str
    define: str                  # its -D flag ("" for a many-bug variant: see defines)
    cls: str                     # its class; "many" for a many-bug variant
    description: str
    threads: int = 1             # threads a history needs to show it (catalog "threads")
    # A many-bug variant (catalog entry with "bugs"): the seeded bugs it builds in at once, and
    # their defines; empty for a single seeded bug
    parts: tuple[str, ...] = ()
    part_defines: tuple[str, ...] = ()
    # what names this bug in the records of its own variant (catalog "signature": the file:line of
    # its lost stores or leaked objects, or the group of a failure without crash): how a record of
    # a many-bug variant is told to be this bug's (bench/detection --many, tests/quality/test_many.py)
    signature: tuple[str, ...] = ()
    other_classes: tuple[str, ...] = ()   # catalog "other_classes": classes it may also show as

    @property
    def defines(self) -> tuple[str, ...]:
        """The -D flags its driver is built with: its own, or all its parts'."""
        return self.part_defines if self.parts else (self.define,)

    @property
    def many(self) -> bool:
        return bool(self.parts)


@dataclass
class Structure:
    name: str
    folder: Path                 # sources (trees/<name> or the user's)
    build: Path                  # where its drivers are
    builtin: bool
    bugs: list[SeededBug] = field(default_factory=list)   # its seeded bugs, one per variant
    many: list[SeededBug] = field(default_factory=list)   # its many-bug variants (several at once)
    known: list[dict] = field(default_factory=list)   # expect.json "known" entries
    expect_model: str | None = None   # expect.json "model": the persistency model it is built for
    models: tuple[str, ...] = MODELS
    model_file: Path | None = None   # a user's reference model (crashcheck build --model FILE.py)
    thresholds: tuple[int, ...] = ()  # expect.json "thresholds": capacities histories must cross
    reserved_keys: tuple[bytes, ...] = ()   # expect.json "reserved_keys": keys it cannot store
    distinct_values: bool = False     # expect.json "distinct_values": no value written twice

    def driver(self, bug: str | None = None) -> Path:
        """The traced driver, or a seeded-bug variant's."""
        if bug is None:
            path = self.build / "driver"
        else:
            self.bug(bug)
            path = self.build / f"driver-bug-{bug}"
        if not path.exists():
            hint = "run `make trees` (or scripts/setup)" if self.builtin else f"run `crashcheck build {self.name} ...` again"
            raise UsageError(f"driver for {self.name}{' bug ' + bug if bug else ''} not built ({path}); {hint}")
        return path

    def native_driver(self) -> Path:
        return self.build / "driver-native"

    def bug(self, name: str) -> SeededBug:
        """The seeded bug or many-bug variant NAME (`--bug NAME`), or UsageError naming those known."""
        for b in self.bugs + self.many:
            if b.name == name:
                return b
        raise UsageError(f"{self.name} has no seeded bug {name!r}; known: "
                         f"{', '.join(b.name for b in self.bugs + self.many) or 'none'}")

    @property
    def info(self) -> dict:
        return _driver_info(str(self.driver()))

    @property
    def key_kind(self) -> str:
        return self.info.get("key_kind", "u64")

    @property
    def value_size(self) -> int:
        return int(self.info.get("value_size", 8))

    @property
    def designed_for(self) -> str:
        """The persistency model it is built for: the adapter's `.persistency`, else expect.json's
        "model", else adr. Fuzz judges it under this model unless --model is given."""
        declared = self.info.get("persistency") if (self.build / "driver").exists() else None
        if declared is not None and declared not in MODELS:
            raise UsageError(f"{self.name}: its adapter declares .persistency = {declared!r}; use "
                             f"{' or '.join(repr(m) for m in MODELS)} (or NULL for adr)")
        return declared or self.expect_model or "adr"

    @property
    def spec_model(self) -> str:
        """The reference model the structure is judged against (specs/registry.py), as its driver
        says: `ordered_map` for every map, `range_lock` for the range lock."""
        return str(self.info.get("model", "ordered_map"))

    def model(self):
        """The structure's reference model (a crashcheck.specs.model.Model): a registered one, or the one its
        `crashcheck build --model FILE.py` gave. UsageError if neither knows its name."""
        from crashcheck.specs import registry
        name = self.spec_model
        if name in registry.names():
            return registry.get(name)
        if self.model_file is None:
            raise UsageError(f"{self.name} is judged against the model {name!r}, which crashcheck does not "
                             f"know (known: {', '.join(registry.names())}); build it with "
                             "`crashcheck build ... --model FILE.py` defining MODEL")
        try:
            return registry.load_file(name, self.model_file)
        except ValueError as exc:
            raise UsageError(f"{self.name}: {exc}") from None

    @property
    def thread_safe(self) -> bool:
        """Its operations may run from several threads at once (`driver info` "threads", the
        adapter's `threads` flag); the thesis trees' may not."""
        return bool(self.info.get("threads", False))

    @property
    def has_pm(self) -> bool:
        """False for a structure that lives in DRAM only (no pool, no crash states)."""
        return bool(self.info.get("pm", True))

    @property
    def own_pool(self) -> bool:
        """It maps its pool file itself (libpmemobj; the adapter's create_file/open_file): only a
        tracer that sees the library's stores can trace it (pmemcheck; the pass if
        `pass_traces_pool`)."""
        return bool(self.info.get("own_pool", False))

    @property
    def pass_traces_pool(self) -> bool:
        """Its own pool is mapped by libpmemobj's pmemobj_create/pmemobj_open (or libpmem's
        pmem_map_file), which the pass redirects to the runtime (instrument/runtime/rt_pmemobj.c),
        so the pass traces it too (`driver info` "pass_traces_pool")."""
        return bool(self.info.get("pass_traces_pool", False))

    @property
    def pmdk_library(self) -> bool:
        """Its own pool is mapped by a libpmemobj built with the pass (`crashcheck build --pmdk`;
        `driver info` "pmdk_library"): the library's pool creation would be traced too, so each
        history starts from a pool made once, untraced (harness/check/base_pool.py)."""
        return bool(self.info.get("pmdk_library", False))

    @property
    def map_ops(self) -> tuple[str, ...]:
        """The map operations the structure has (`driver info` "map_ops"; update, delete and scan
        are optional, a NULL verb of its adapter). Drivers before map_ops: all five."""
        return tuple(self.info.get("map_ops", ("insert", "update", "delete", "lookup", "scan")))

    @property
    def value_min(self) -> int:
        """The shortest value the structure takes (drivers before value_min: value_size)."""
        return int(self.info.get("value_min", self.value_size))


@lru_cache(maxsize=None)
def _driver_info(driver: str) -> dict:
    try:
        out = subprocess.run([driver, "info"], capture_output=True, text=True, timeout=30, check=True).stdout
        info = json.loads(out)
    except subprocess.CalledProcessError as exc:
        # the driver's own last words (a runtime that cannot start, a crash in crashcheck's code)
        from crashcheck.harness.target import own_fault
        from crashcheck.specs.oracle import signal_name
        how = (f"died of {signal_name(-exc.returncode)}" if exc.returncode < 0 else f"exit {exc.returncode}")
        fault = own_fault.find(exc.stderr)
        said = [x for x in (exc.stderr or "").strip().splitlines() if x.strip()]
        why = own_fault.describe(fault) if fault else (said[-1].strip()[:300] if said else "no message")
        raise UsageError(f"{driver} info failed ({how}): {why}") from None
    except (subprocess.SubprocessError, OSError, ValueError) as exc:
        raise UsageError(f"{driver} info failed: {exc}") from None
    if not isinstance(info, dict):
        raise UsageError(f"{driver} info printed {type(info).__name__}, not a JSON object")
    return info


def _load_json(path: Path, default):
    if not path.exists():
        return default
    return read_json(path, "catalog file")


# Names become file names (build/user/NAME, driver-bug-NAME): ASCII only (str.isalnum would let
# any script's letters through) and short enough for every file system's name limit.
NAME_MAX = 64
STRUCTURE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,%d}\Z" % (NAME_MAX - 1))
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,%d}\Z" % (NAME_MAX - 1))
_DEFINE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# A catalog entry of class "none" is a control variant that must pass (e.g. a structure that only
# prints noise): the gate and the misbehaviour tests fuzz it and expect no finding.
BUG = Obj({"name": (Text(), REQUIRED), "define": (Text(), REQUIRED), "class": (Text(CLASSES + CONCURRENT_CLASSES + ("none",)), REQUIRED),
           "description": (Text(), ""), "threads": (Nat(1), 1), "signature": (List(Text()), list),
           "other_classes": (List(Text(CLASSES + CONCURRENT_CLASSES)), list)})
# A many-bug variant: the entry names other entries ("bugs") instead of a define, and its driver is
# built with all their defines at once (docs/trees.md "Many bugs at once"). Its class is "many".
MANY = "many"
COMBINED = Obj({"name": (Text(), REQUIRED), "bugs": (List(Text()), REQUIRED), "class": (Text((MANY,)), MANY),
                "description": (Text(), ""), "threads": (Nat(1), 1)})


class _Entry:
    """One catalog entry: a many-bug variant when it names "bugs", else a seeded bug."""

    def check(self, value, where):
        return (COMBINED if isinstance(value, dict) and "bugs" in value else BUG).check(value, where)


BUGS = List(_Entry())
# "model": the persistency model the structure is built for (Heart: eadr, no flushes); runs use it
# unless told otherwise. Absent: adr.
EXPECT = Obj({"model": (Opt(Text(MODELS)), None), "known": (List(Obj({"class": (Text(CLASSES), REQUIRED), "alloc_func": (Opt(Text()), None),
                                  "reason": (Text(), "")})), list),
              # capacities the structure's histories must cross (specs/map_histories.py): a unit
              # (chunk, node) that holds KEYS keys; up to MAX_THRESHOLD
              "thresholds": (List(Obj({"keys": (Nat(1), REQUIRED), "what": (Text(), "")})), list),
              # keys it cannot store (0 marking an empty slot, 2^64-1, LONG_MAX), in the driver's key
              # notation, and whether every value written must differ: the generator respects both
              "reserved_keys": (List(Text()), list), "distinct_values": (Bool(), False)})
META = Obj({"folder": (Opt(Text()), None), "bugs": (Opt(Text()), None), "model_file": (Opt(Text()), None)})


def _checked(spec, path: Path, default):
    """The catalog file PATH checked against SPEC, or UsageError naming the file and the field."""
    try:
        return spec.check(_load_json(path, default), "")
    except SchemaError as exc:
        raise UsageError(f"{path}: {exc}") from None


def read_bugs(path: Path) -> list[SeededBug]:
    """The seeded-bug catalog PATH (none if it does not exist), checked, or UsageError."""
    bugs: list[SeededBug] = []
    entries = _checked(BUGS, path, [])
    for i, b in enumerate(entries):
        # the name becomes a file name (driver-bug-NAME), the define a -D flag
        if not _NAME.match(b["name"]):
            raise UsageError(f"{path}: [{i}].name {b['name'][:40]!r} is not a name (letters, digits, - _ ., at most {NAME_MAX})")
        if any(b["name"] == other.name for other in bugs):
            raise UsageError(f"{path}: two seeded bugs are named {b['name']!r}")
        if "bugs" in b:
            bugs.append(_combined(path, i, b, entries))
            continue
        if not _DEFINE.match(b["define"]):
            raise UsageError(f"{path}: [{i}].define {b['define'][:40]!r} is not a C macro name")
        bugs.append(SeededBug(b["name"], b["define"], b["class"], b["description"], b["threads"],
                              signature=tuple(b["signature"]), other_classes=tuple(b["other_classes"])))
    return bugs


def _combined(path: Path, i: int, entry: dict, entries: list[dict]) -> SeededBug:
    """The many-bug variant ENTRY ([I] of the catalog PATH): its parts must be seeded bugs of the
    same catalog (not variants themselves), each named once, and it needs the most threads any of
    them needs."""
    singles = {e["name"]: e for e in entries if "bugs" not in e}
    names = entry["bugs"]
    if not names:
        raise UsageError(f"{path}: [{i}].bugs names no seeded bug")
    for name in names:
        if name not in singles:
            raise UsageError(f"{path}: [{i}].bugs: {name[:40]!r} is not a seeded bug of this catalog "
                             f"(known: {', '.join(singles) or 'none'})")
    if len(set(names)) != len(names):
        raise UsageError(f"{path}: [{i}].bugs names a seeded bug twice")
    threads = max([entry["threads"]] + [singles[n]["threads"] for n in names])
    return SeededBug(entry["name"], "", MANY, entry["description"], threads, parts=tuple(names),
                     part_defines=tuple(singles[n]["define"] for n in names))


# The largest capacity a structure may declare: a history crossing it loads that many keys.
MAX_THRESHOLD = 256


def _catalog(folder: Path, bugs_file: Path | None = None) -> tuple:
    """FOLDER's seeded bugs and expectations: (bugs, known, model, thresholds, reserved keys,
    distinct values), checked, or UsageError naming the file and the field."""
    bugs = read_bugs(bugs_file or folder / "bugs.json")
    path = folder / "expect.json"
    expect = _checked(EXPECT, path, {})
    thresholds = tuple(sorted({t["keys"] for t in expect["thresholds"]}))
    if thresholds and thresholds[-1] > MAX_THRESHOLD:
        raise UsageError(f"{path}: thresholds: {thresholds[-1]} keys is more than the {MAX_THRESHOLD} a history may load")
    reserved = []
    for i, text in enumerate(expect["reserved_keys"]):
        try:
            reserved.append(parse_token(text, is_key=True))
        except ValueError:
            raise UsageError(f"{path}: reserved_keys[{i}]: {text[:40]!r} is not a key (a decimal 64-bit "
                             "integer, or x:HEX for a byte key)") from None
    return bugs, expect["known"], expect["model"], thresholds, tuple(reserved), expect["distinct_values"]


def _split(bugs: list[SeededBug]) -> tuple[list[SeededBug], list[SeededBug]]:
    """A catalog's entries as (seeded bugs, many-bug variants)."""
    return [b for b in bugs if not b.many], [b for b in bugs if b.many]


def builtin_names() -> list[str]:
    trees = ROOT / "trees"
    return sorted(p.name for p in trees.iterdir()
                  if p.is_dir() and p.name != "common" and (p / "adapter.c").exists())


def user_names() -> list[str]:
    names: set[str] = set()
    for users in user_build_folders():
        if users.is_dir():
            names.update(p.name for p in users.iterdir() if (p / "meta.json").exists())
    return sorted(names)


def all_names() -> list[str]:
    return builtin_names() + [n for n in user_names() if n not in builtin_names()]


def get(name: str) -> Structure:
    if name in builtin_names():
        folder = ROOT / "trees" / name
        bugs, known, model, thresholds, reserved, distinct = _catalog(folder)
        return Structure(name, folder, BUILD / "trees" / name, True, *_split(bugs), known, expect_model=model,
                         thresholds=thresholds, reserved_keys=reserved, distinct_values=distinct)
    build = user_build(name) if STRUCTURE_NAME.match(name) else None
    if build is not None:
        meta = _checked(META, build / "meta.json", {})
        folder = Path(meta["folder"] or build)
        bugs, known, model, thresholds, reserved, distinct = _catalog(
            folder, Path(meta["bugs"]) if meta["bugs"] else None)
        return Structure(name, folder, build, False, *_split(bugs), known, expect_model=model,
                         model_file=Path(meta["model_file"]) if meta["model_file"] else None,
                         thresholds=thresholds, reserved_keys=reserved, distinct_values=distinct)
    raise UsageError(f"unknown structure {name!r}; known: {', '.join(all_names()) or 'none (run make)'}")

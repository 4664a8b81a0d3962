"""Bug records and results files (docs/bug-record.md), checked before anything reads them.

Owns what a valid record and a valid results file look like, as data (RECORD, RESULTS below), and
reading such a file from a path a user gave: only a regular file, UTF-8 JSON without NaN, nesting
and number sizes Python can take. `replay` and `report` call `load_record` / `load_results`; a
file that fails gets one UsageError line naming the file, the field (`bugs[2].crash.choice[0]`)
and what it should be. Checked values come back normalised: optional fields that are missing get
their documented defaults, so the readers index fields without guessing. Never judges whether a
record still reproduces (that is `crashcheck replay`'s job).

Versions: results files carry `"crashcheck": 1`; records written since this module carry it too,
and records without it (written before) are read as version 1.
"""
from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crashsim.persistency import MODELS
from crashsim.states import STRATEGIES
from harness.core.defaults import LIMIT, TRACER, TRACERS
from harness.core.errors import UsageError

FORMAT = 1                     # the "crashcheck" field of results files and bug records
MAX_FILE = 1 << 30             # bytes; a results file of a long run with many bugs stays far below
MAX_INT = 1 << 63              # counts, offsets and indexes above this are corrupt, not big


class SchemaError(Exception):
    """A value that does not fit its spec (internal): WHERE is the field path."""

    def __init__(self, where: str, want: str, value: Any = None, missing: bool = False):
        super().__init__(f"{where} is missing" if missing else
                         f"{where or 'the top level'} must be {want}, not {_kind(value)}")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value}" if abs(value) < 10 ** 12 else "a number that large"
    if isinstance(value, float):
        return f"{value}"
    if isinstance(value, str):
        return f"the text {value[:40]!r}" if len(value) <= 40 else "a text"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return "an object" if isinstance(value, dict) else type(value).__name__


# -- specs: small classes, each checks one value and returns it normalised ------------------------

class Spec:
    def check(self, value: Any, where: str) -> Any:
        raise NotImplementedError


@dataclass(frozen=True)
class Nat(Spec):
    """A whole number from LO up to (not including) MAX_INT."""
    lo: int = 0

    def check(self, value, where):
        if isinstance(value, bool) or not isinstance(value, int) or not self.lo <= value < MAX_INT:
            raise SchemaError(where, f"a whole number from {self.lo} to 2^63-1", value)
        return value


@dataclass(frozen=True)
class Big(Spec):
    """A count of any size: a whole number >= 0, or one written as a decimal string."""

    def check(self, value, where):
        if isinstance(value, str) and value.isdigit() and value.isascii():
            return value
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SchemaError(where, "a whole number >= 0 (or its decimal text)", value)
        return value


@dataclass(frozen=True)
class Seconds(Spec):
    def check(self, value, where):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or value < 0:
            raise SchemaError(where, "a number of seconds >= 0", value)
        return value


@dataclass(frozen=True)
class Text(Spec):
    choices: tuple[str, ...] = ()

    def check(self, value, where):
        if not isinstance(value, str):
            raise SchemaError(where, "a text", value)
        if self.choices and value not in self.choices:
            raise SchemaError(where, f"one of {', '.join(self.choices)}", value)
        return value


@dataclass(frozen=True)
class Bool(Spec):
    def check(self, value, where):
        if not isinstance(value, bool):
            raise SchemaError(where, "true or false", value)
        return value


@dataclass(frozen=True)
class Opt(Spec):
    """SPEC or null."""
    spec: Spec

    def check(self, value, where):
        return None if value is None else self.spec.check(value, where)


@dataclass(frozen=True)
class List(Spec):
    item: Spec

    def check(self, value, where):
        if not isinstance(value, list):
            raise SchemaError(where, "a list", value)
        return [self.item.check(v, f"{where}[{i}]") for i, v in enumerate(value)]


@dataclass(frozen=True)
class Tuple(Spec):
    items: tuple[Spec, ...]

    def check(self, value, where):
        if not isinstance(value, list) or len(value) != len(self.items):
            raise SchemaError(where, f"a list of {len(self.items)}", value)
        return [s.check(v, f"{where}[{i}]") for i, (s, v) in enumerate(zip(self.items, value))]


@dataclass(frozen=True)
class Map(Spec):
    """An object with any keys, each value a VALUE."""
    value: Spec

    def check(self, value, where):
        if not isinstance(value, dict):
            raise SchemaError(where, "an object", value)
        return {k: self.value.check(v, f"{where}[{k!r}]") for k, v in value.items()}


REQUIRED = object()


@dataclass(frozen=True, eq=False)
class Obj(Spec):
    """An object with these FIELDS: name -> (spec, default), REQUIRED as the default for a field
    that must be there. Unknown fields are kept (a newer crashcheck of the same format may add some)."""
    fields: dict

    def check(self, value, where):
        if not isinstance(value, dict):
            raise SchemaError(where, "an object", value)
        out = dict(value)
        for name, (spec, default) in self.fields.items():
            at = f"{where}.{name}" if where else name
            if name not in value:
                if default is REQUIRED:
                    raise SchemaError(at, "present", missing=True)
                out[name] = default() if callable(default) else default
            else:
                out[name] = spec.check(value[name], at)
        return out


# -- the formats of docs/bug-record.md ----------------------------------------------------------

_PLACE = {"file": (Text(), ""), "line": (Nat(), 0), "column": (Nat(), 0), "func": (Text(), "")}
SITE = Obj({**_PLACE, "inlined_at": (Opt(Obj(_PLACE)), None)})
STORE = Obj({"seq": (Nat(), REQUIRED), "off": (Nat(), REQUIRED), "size": (Nat(), REQUIRED),
             "data": (Text(), ""), "site": (Opt(SITE), None), "region": (Nat(), 0)})
LEAK = Obj({"off": (Nat(), REQUIRED), "size": (Nat(), REQUIRED), "site": (Opt(SITE), None)})
PAIR = Tuple((Text(), Text()))                      # [key, value] in driver notation
DUMP = List(PAIR)
CHOICE = List(Nat())
CRASH = Obj({"index": (Opt(Nat()), REQUIRED), "choice": (CHOICE, list), "event": (Opt(Nat()), None),
             "kind": (Text(), "none"), "op": (Opt(Nat()), None), "done": (Nat(), 0),
             "inflight": (Opt(Nat()), None), "site": (Opt(SITE), None)})
TIMELINE = Obj({"seq": (Nat(), REQUIRED), "kind": (Text(), REQUIRED), "sub": (Text(), ""),
                "off": (Opt(Nat()), None), "size": (Nat(), 0), "line": (Nat(), 0),
                "state": (Opt(Text(("durable", "persisted", "lost"))), None)})
COVERAGE = Obj({"legal": (Big(), REQUIRED), "explored": (Nat(), REQUIRED), "exhaustive": (Bool(), False)})
# a hang: the states of its crash point that hung its way, and the checks that took the full or the
# shorter time limit (harness/check/hangs.py)
HUNG = Obj({"states": (Nat(), REQUIRED), "explored": (Opt(Nat()), None), "full": (Nat(), 0),
            "short": (Nat(), 0), "short_ms": (Opt(Nat()), None), "history_states": (Nat(), 0),
            "history_points": (Nat(), 0)})
# a threaded run's picture (harness/triage/lanes.py): positions are trace event indices
LANE = Obj({"thread": (Nat(), REQUIRED), "op": (Nat(), REQUIRED), "text": (Text(), REQUIRED),
            "result": (Opt(Text()), None), "call": (Nat(), REQUIRED), "ret": (Opt(Nat()), None)})
PREEMPTION = Obj({"step": (Nat(), REQUIRED), "from": (Nat(), REQUIRED), "to": (Nat(), REQUIRED),
                  "at": (Nat(), REQUIRED), "site": (Opt(SITE), None), "where": (Text(), "")})
ASSUMPTIONS = Obj({"model": (Text(MODELS), "adr"), "atomic_unit": (Nat(1), 8),
                   "clflush_guarantees": (Bool(), False), "text": (Text(), "")})
SOURCE = Obj({"file": (Text(), REQUIRED), "line": (Nat(), REQUIRED),
              "lines": (List(Tuple((Nat(), Text()))), REQUIRED)})


def _classes() -> tuple[str, ...]:
    from specs.oracle import CLASSES, CONCURRENT_CLASSES
    return CLASSES + CONCURRENT_CLASSES


# one root cause, one bug (harness/triage/bugs.py): the other findings of the bug, its store orders
SYMPTOM = Obj({"class": (Text(_classes()), REQUIRED), "detail": (Text(), ""), "group": (Text(), ""),
               "occurrences": (Nat(), 1), "same_state": (Bool(), False),
               "lost": (List(Text()), list), "persisted": (List(Text()), list)})
ORDER = Obj({"persisted": (List(Text()), list), "lost": (List(Text()), list),
             "class": (Text(_classes()), REQUIRED)})

RECORD = Obj({
    "crashcheck": (Nat(), FORMAT),
    "id": (Text(), REQUIRED),
    "class": (Text(_classes()), REQUIRED),
    "structure": (Text(), REQUIRED),
    "bug": (Opt(Text()), None),
    "model": (Text(MODELS), REQUIRED),
    "strategy": (Text(STRATEGIES), "bounded"),
    "seed": (Nat(), 0),
    "limit": (Nat(1), LIMIT),
    "tracer": (Text(TRACERS), TRACER),
    "spec_model": (Text(), "ordered_map"),
    "history": (List(Text()), REQUIRED),
    "load": (Nat(), 0),
    "followup": (List(Text()), list),
    "followup_outputs": (List(Text()), list),
    "crash": (CRASH, REQUIRED),
    "recovery_of": (Opt(Obj({"index": (Nat(), REQUIRED), "choice": (CHOICE, REQUIRED)})), None),
    "expected": (Bool(), False),
    "expected_reason": (Opt(Text()), None),
    "detail": (Text(), ""),
    "group": (Text(), ""),
    "occurrences": (Nat(), 1),
    "lost": (List(STORE), list),
    "persisted": (List(STORE), list),
    "sites": (List(Text()), list),
    "expected_states": (List(DUMP), list),
    "actual": (Opt(DUMP), None),
    "leaks": (List(LEAK), list),
    "coverage": (Opt(COVERAGE), None),
    "hung": (Opt(HUNG), None),
    "timeline": (List(TIMELINE), list),
    "sources": (Map(SOURCE), dict),
    "replay": (Text(), ""),
    "threads": (Nat(1), 1),
    "thread_of": (List(Nat()), list),
    "sched": (Opt(Text()), None),
    "schedule": (Opt(Text()), None),
    "lanes": (List(LANE), list),
    "preemptions": (List(PREEMPTION), list),
    "lanes_crash": (Opt(Nat()), None),
    "assumptions": (Opt(ASSUMPTIONS), None),
    "cause": (List(Text()), list),
    "symptoms": (List(SYMPTOM), list),
    "orders": (List(ORDER), list),
})
STATS = Obj({"histories": (Nat(), 0), "crash_points": (Nat(), 0), "states_legal": (Big(), 0),
             "states_explored": (Nat(), 0), "points_sampled": (Nat(), 0), "points_complete": (Nat(), 0),
             "executions": (Nat(), 0), "hung_short": (Nat(), 0), "elapsed_s": (Seconds(), 0.0)})
RESULTS = Obj({
    "crashcheck": (Nat(), REQUIRED),
    "structures": (List(Text()), list),
    "model": (Text(MODELS), REQUIRED),
    "strategy": (Text(STRATEGIES), REQUIRED),
    "seed": (Nat(), 0),
    "tracer": (Text(TRACERS), TRACER),
    "command": (Opt(Text()), None),
    "stats": (STATS, REQUIRED),
    "per_structure": (Opt(List(Obj({"structure": (Text(), REQUIRED), "bug": (Opt(Text()), None),
                                    "stats": (STATS, REQUIRED), "unexpected": (Nat(), 0),
                                    "expected": (Nat(), 0),
                                    "warnings": (List(Text()), list)}))), None),
    "bugs": (List(RECORD), REQUIRED),
})


def _version(data: Any, path: str, what: str, required: bool) -> None:
    if not isinstance(data, dict):
        raise UsageError(f"{path}: not a {what} (the file holds {_kind(data)}, not an object)")
    if "crashcheck" not in data:
        if required:
            raise UsageError(f"{path}: not a crashcheck {what} (no \"crashcheck\" format field; write one with "
                             "`crashcheck fuzz --json`)")
        return
    version = data["crashcheck"]
    if version != FORMAT or isinstance(version, bool):
        raise UsageError(f"{path}: {what} of format {_kind(version)}; this crashcheck reads format "
                         f"{FORMAT} (use the crashcheck that wrote it)")


def check_record(data: Any, path: str) -> dict:
    """DATA as a valid bug record (defaults filled in), or UsageError naming the bad field."""
    _version(data, path, "bug record", required=False)
    try:
        rec = RECORD.check(data, "")
    except SchemaError as exc:
        raise UsageError(f"{path}: not a valid bug record: {exc}") from None
    _consistent(rec, path, "")
    return rec


def check_results(data: Any, path: str) -> dict:
    """DATA as a valid results file, or UsageError naming the bad field."""
    _version(data, path, "results file", required=True)
    try:
        res = RESULTS.check(data, "")
    except SchemaError as exc:
        raise UsageError(f"{path}: not a valid results file: {exc}") from None
    for i, rec in enumerate(res["bugs"]):
        _consistent(rec, path, f"bugs[{i}].")
    return res


def _consistent(rec: dict, path: str, where: str) -> None:
    """What the types cannot say: the load phase lies inside the history, a lane returns after
    its call."""
    if rec["load"] > len(rec["history"]):
        raise UsageError(f"{path}: not a valid bug record: {where}load ({rec['load']}) is longer than "
                         f"the history ({len(rec['history'])} operations)")
    if rec["thread_of"] and (len(rec["thread_of"]) != len(rec["history"])
                             or list(rec["thread_of"]) != sorted(rec["thread_of"])
                             or max(rec["thread_of"]) > rec["threads"]):
        raise UsageError(f"{path}: not a valid bug record: {where}thread_of must give each operation of the "
                         f"history its thread (0 for the load phase, then 1..threads in order)")
    for i, lane in enumerate(rec["lanes"]):
        if lane["ret"] is not None and lane["ret"] <= lane["call"]:
            raise UsageError(f"{path}: not a valid bug record: {where}lanes[{i}] returns at event {lane['ret']}, "
                             f"before its call at event {lane['call']}")


def read_json(path: str | os.PathLike, what: str) -> Any:
    """The JSON value in PATH, a regular file of at most MAX_FILE bytes of UTF-8, or UsageError.
    NaN and Infinity (which Python's json would take) are refused: no format has them."""
    name = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise UsageError(f"{name}: no such {what}") from None
    except OSError as exc:
        raise UsageError(f"{name}: cannot open this {what}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise UsageError(f"{name}: is a folder, not a {what}")
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{name}: not a regular file (a FIFO, socket or device); a {what} must be a file")
        if st.st_size > MAX_FILE:
            raise UsageError(f"{name}: {st.st_size} bytes, too large for a {what} (at most {MAX_FILE})")
        with os.fdopen(os.dup(fd), "rb") as f:
            raw = f.read(st.st_size)
    except OSError as exc:
        raise UsageError(f"{name}: cannot read this {what}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{name}: not a {what}: byte {exc.start} is not UTF-8 text (a binary file?)") from None

    def no_constant(token: str):
        raise ValueError(f"{token} is not a JSON number")
    try:
        return json.loads(text, parse_constant=no_constant)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{name}: not a {what}: bad JSON ({exc})") from None
    except RecursionError:
        raise UsageError(f"{name}: not a {what}: JSON nested too deeply") from None
    except ValueError as exc:     # NaN / Infinity, or an integer of thousands of digits
        raise UsageError(f"{name}: not a {what}: {exc}") from None


def load_results(path: str | os.PathLike) -> dict:
    return check_results(read_json(path, "results file"), str(path))


def load_record(path: str | os.PathLike, ident: str | None = None) -> dict:
    """A bug record: the file itself, or bug IDENT of a results file (its only bug without IDENT)."""
    name = str(path)
    data = read_json(path, "bug record")
    if isinstance(data, dict) and "bugs" in data:
        results = check_results(data, name)
        bugs = results["bugs"]
        if ident is None:
            if len(bugs) != 1:
                raise UsageError(f"{name} is a results file with {len(bugs)} bugs; choose one with --id "
                                 f"({', '.join(b['id'] for b in bugs[:5])}{', ...' if len(bugs) > 5 else ''})"
                                 if bugs else f"{name} is a results file without bugs; nothing to replay")
            return bugs[0]
        for b in bugs:
            if b["id"] == ident:
                return b
        raise UsageError(f"{name}: no bug {ident!r}")
    if ident is not None:
        raise UsageError(f"{name} is a single bug record; --id is for results files")
    return check_record(data, name)


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """True if paths A and B name one file (through symlinks, hard links, relative paths)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(a).resolve() == Path(b).resolve()

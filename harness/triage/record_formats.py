"""The bug-record and results-file formats (docs/bug-record.md), checked before anything reads them.

Owns what a valid record and a valid results file look like, as data (RECORD, RESULTS below, built
with the schema kit of harness/core/schema.py), and loading one from a path a user gave (the file
read by harness/core/user_files.py: a regular file of UTF-8 JSON without NaN). `replay` and
`report` call `load_record` / `load_results`; a file that fails gets one UsageError line naming the
file, the field (`bugs[2].crash.choice[0]`) and what it should be. Checked values come back
normalised: optional fields that are missing get their documented defaults, so the readers index
fields without guessing. Never judges whether a record still reproduces (that is `crashcheck
replay`'s job).

Versions: results files carry `"crashcheck": 1`; records written since this module carry it too,
and records without it (written before) are read as version 1.
"""
from __future__ import annotations

import os
from typing import Any

from crashcheck.crashsim.persistency import ALL_MODELS
from crashcheck.crashsim.states import STRATEGIES
from crashcheck.harness.core.defaults import LIMIT, TRACER, TRACERS
from crashcheck.harness.core.errors import UsageError
from crashcheck.harness.core.schema import (REQUIRED, Big, Bool, List, Map, Nat, Obj, Opt, SchemaError, Seconds, Text, Tuple,
                                 value_kind)
from crashcheck.harness.core.user_files import read_json

FORMAT = 1                     # the "crashcheck" field of results files and bug records


# -- the formats of docs/bug-record.md ----------------------------------------------------------

_PLACE = {"file": (Text(), ""), "line": (Nat(), 0), "column": (Nat(), 0), "func": (Text(), "")}
SITE = Obj({**_PLACE, "inlined_at": (Opt(Obj(_PLACE)), None), "via": (List(Text()), list),
            "inline_chain": (List(Text()), list),
            "own": (Bool(), False), "code_pointer": (Bool(), False)})
CALL = Obj({"function": (Text(), REQUIRED), "site": (Opt(SITE), None), "stack": (List(Opt(SITE)), list)})
STORE = Obj({"seq": (Nat(), REQUIRED), "off": (Nat(), REQUIRED), "size": (Nat(), REQUIRED),
             "data": (Text(), ""), "site": (Opt(SITE), None), "region": (Nat(), 0),
             "call": (Opt(CALL), None)})
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
COVERAGE = Obj({"legal": (Big(), REQUIRED), "explored": (Big(), REQUIRED), "exhaustive": (Bool(), False)})
# a hang: the states of its crash point that hung its way, and the checks that took the full or the
# shorter time limit (harness/check/hangs.py)
HUNG = Obj({"states": (Big(), REQUIRED), "explored": (Opt(Big()), None), "full": (Nat(), 0),
            "short": (Nat(), 0), "short_ms": (Opt(Nat()), None), "history_states": (Big(), 0),
            "history_points": (Nat(), 0)})
# a threaded run's picture (harness/triage/lanes.py): positions are trace event indices
LANE = Obj({"thread": (Nat(), REQUIRED), "op": (Nat(), REQUIRED), "text": (Text(), REQUIRED),
            "result": (Opt(Text()), None), "call": (Nat(), REQUIRED), "ret": (Opt(Nat()), None)})
PREEMPTION = Obj({"step": (Nat(), REQUIRED), "from": (Nat(), REQUIRED), "to": (Nat(), REQUIRED),
                  "at": (Nat(), REQUIRED), "site": (Opt(SITE), None), "where": (Text(), "")})
ASSUMPTIONS = Obj({"model": (Text(ALL_MODELS), "adr"), "atomic_unit": (Nat(1), 8),
                   "clflush_guarantees": (Bool(), False), "text": (Text(), "")})
SOURCE = Obj({"file": (Text(), REQUIRED), "line": (Nat(), REQUIRED),
              "lines": (List(Tuple((Nat(), Text()))), REQUIRED)})


def _classes() -> tuple[str, ...]:
    from crashcheck.specs.oracle import CLASSES, CONCURRENT_CLASSES
    from crashcheck.harness.check.program_check import PROGRAM_CLASSES
    return CLASSES + CONCURRENT_CLASSES + PROGRAM_CLASSES


# program mode (`crashcheck run`): how to run the program and its commands again
PROGRAM = Obj({"argv": (List(Text()), REQUIRED), "checker": (Text(), REQUIRED), "recover": (Opt(Text()), None),
               "timeout_s": (Seconds(), 10.0), "run": (Nat(), 0), "run_seed": (Opt(Nat()), None),
               "sched": (Opt(Text()), None), "operation": (Text(), ""), "setup": (Opt(Text()), None)})

# the fingerprint of the recorded run's trace up to the crash (harness/check/trace_digest.py)
TRACE_DIGEST = Obj({"events": (Nat(), REQUIRED), "block": (Nat(1), REQUIRED),
                    "path": (List(Text()), REQUIRED), "stored": (List(Text()), REQUIRED),
                    "binary": (Text(), "")})


# one root cause, one bug (harness/triage/bugs.py): the other findings of the bug, its store orders
SYMPTOM = Obj({"class": (Text(_classes()), REQUIRED), "detail": (Text(), ""), "group": (Text(), ""),
               "occurrences": (Big(), 1), "same_state": (Bool(), False),
               "lost": (List(Text()), list), "persisted": (List(Text()), list)})
# how far a bug was shrunk (harness/run/search.py): its history, its crash state
_HOW = ("done", "cut by the budget", "not tried")
SHRINK = Obj({"history": (Text(_HOW), "not tried"), "crash_state": (Text(_HOW + ("no crash state",)), "not tried")})
ORDER = Obj({"persisted": (List(Text()), list), "lost": (List(Text()), list),
             "class": (Text(_classes()), REQUIRED)})
# an ordering bug's fix, proven on the trace (harness/triage/fix_record.py)
FIX_EDIT = Obj({"kind": (Text(), REQUIRED), "file": (Text(), ""), "line": (Nat(), 0),
                "where": (Text(("after", "before")), "after"), "other": (Text(), ""),
                "statement": (Text(), ""), "lines": (List(Tuple((Nat(), Text()))), list)})
FIX = Obj({"found": (Bool(), REQUIRED), "tried": (Nat(), 0), "search_s": (Seconds(), 0.0),
           "rejected": (List(Text()), list), "reason": (Text(), ""), "file": (Text(), ""), "line": (Nat(), 0),
           "where": (Text(("after", "before")), "after"), "statement": (Text(), ""), "text": (Text(), ""),
           "edits": (List(FIX_EDIT), list), "proven_for": (List(List(Text())), list),
           "failed_for": (List(List(Text())), list), "general": (Bool(), False), "complete": (Bool(), True)})

RECORD = Obj({
    "crashcheck": (Nat(), FORMAT),
    "id": (Text(), REQUIRED),
    "class": (Text(_classes()), REQUIRED),
    "structure": (Text(), REQUIRED),
    "bug": (Opt(Text()), None),
    "model": (Text(ALL_MODELS), REQUIRED),
    "strategy": (Text(STRATEGIES), "bounded"),
    "seed": (Nat(), 0),
    "limit": (Nat(1), LIMIT),
    "tracer": (Text(TRACERS), TRACER),
    "spec_model": (Text(), "ordered_map"),
    "history": (List(Text()), REQUIRED),
    "load": (Nat(), 0),
    # records written before the load phase stopped being traced (2026-11-29) lack it: their
    # crash points are numbered in a trace that holds the load, and replay traces it again
    "load_traced": (Bool(), True),
    "followup": (List(Text()), list),
    "followup_outputs": (List(Text()), list),
    "recovered_state": (Text(), ""),
    "without_crash": (Text(), ""),
    "crash": (CRASH, REQUIRED),
    "recovery_of": (Opt(Obj({"index": (Nat(), REQUIRED), "choice": (CHOICE, REQUIRED)})), None),
    "expected": (Bool(), False),
    "expected_reason": (Opt(Text()), None),
    "detail": (Text(), ""),
    "group": (Text(), ""),
    "occurrences": (Big(), 1),
    "lost": (List(STORE), list),
    "persisted": (List(STORE), list),
    "code_pointers": (List(STORE), list),
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
    "folded_by_fix": (Nat(), 0),
    "shrink": (Opt(SHRINK), None),
    "classes": (List(Text(_classes())), list),
    "orders": (List(ORDER), list),
    "program": (Opt(PROGRAM), None),
    "output": (Text(), ""),
    "fix": (Opt(FIX), None),
    "trace_digest": (Opt(TRACE_DIGEST), None),
})
STATS = Obj({"histories": (Nat(), 0), "crash_points": (Nat(), 0), "states_legal": (Big(), 0),
             "states_explored": (Big(), 0), "points_sampled": (Nat(), 0), "points_complete": (Nat(), 0),
             "executions": (Nat(), 0), "hung_short": (Nat(), 0), "elapsed_s": (Seconds(), 0.0),
             "states_checked": (Big(), 0)})
# `fuzz --perf`: flushes and fences that did nothing (harness/check/perf_tally.py)
PERF = Obj({"histories": (Nat(), 0), "operations": (Nat(), 0), "totals": (Map(Nat()), dict),
            "sites": (List(Obj({"kind": (Text(), REQUIRED), "sub": (Text(), ""), "where": (Text(), ""),
                                "func": (Text(), ""), "count": (Nat(), 0)})), list),
            "by_operation": (Map(Obj({"ops": (Nat(), 0)})), dict)})
RESULTS = Obj({
    "crashcheck": (Nat(), REQUIRED),
    "structures": (List(Text()), list),
    "model": (Text(ALL_MODELS), REQUIRED),
    "strategy": (Text(STRATEGIES), REQUIRED),
    "seed": (Nat(), 0),
    "tracer": (Text(TRACERS), TRACER),
    "command": (Opt(Text()), None),
    "stats": (STATS, REQUIRED),
    "per_structure": (Opt(List(Obj({"structure": (Text(), REQUIRED), "bug": (Opt(Text()), None),
                                    "stats": (STATS, REQUIRED), "unexpected": (Nat(), 0),
                                    "expected": (Nat(), 0),
                                    "warnings": (List(Text()), list), "perf": (Opt(PERF), None)}))), None),
    "bugs": (List(RECORD), REQUIRED),
})


def _version(data: Any, path: str, what: str, required: bool) -> None:
    if not isinstance(data, dict):
        raise UsageError(f"{path}: not a {what} (the file holds {value_kind(data)}, not an object)")
    if "crashcheck" not in data:
        if required:
            raise UsageError(f"{path}: not a crashcheck {what} (no \"crashcheck\" format field; write one with "
                             "`crashcheck fuzz --json`)")
        return
    version = data["crashcheck"]
    if version != FORMAT or isinstance(version, bool):
        raise UsageError(f"{path}: {what} of format {value_kind(version)}; this crashcheck reads format "
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
    prog = rec["program"]
    if prog is not None and (not prog["argv"] or not 0 < prog["timeout_s"] <= 86400):
        raise UsageError(f"{path}: not a valid bug record: {where}program "
                         + ("argv names no program" if not prog["argv"] else
                            f"timeout_s must be more than 0 and at most a day, not {prog['timeout_s']}"))
    for i, lane in enumerate(rec["lanes"]):
        if lane["ret"] is not None and lane["ret"] <= lane["call"]:
            raise UsageError(f"{path}: not a valid bug record: {where}lanes[{i}] returns at event {lane['ret']}, "
                             f"before its call at event {lane['call']}")


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


__all__ = ["FORMAT", "RECORD", "RESULTS", "STATS", "check_record", "check_results", "load_record", "load_results"]

"""Bug records: a finding, its history and its trace, as the JSON of docs/bug-record.md.

Owns everything a record must carry so that the report and `crashcheck replay` need nothing else:
the crash point and its source site, the lost and persisted stores with sites, expected vs actual
dumps in driver notation, leaked objects, the timeline of the operation in flight, a threaded
run's lanes and scheduler switches (harness/triage/lanes.py), and a few lines of source around every site
named; for a bug as reported, its cause, its other symptoms and its store orders
(harness/triage/bugs.py). Every record of a fuzz run is built here, by build_record, and nowhere else
(`crashcheck run`'s records: harness/triage/program_records.py, from the same parts).
Never judges anything (specs/) and never renders HTML.
"""
from __future__ import annotations

import shlex
from pathlib import Path

from crashcheck.crashsim.persistency import Piece
from crashcheck.crashsim.trace import Trace
from crashcheck.harness.triage import bugs, lanes
from crashcheck.harness.triage.fix_record import fix_json
from crashcheck.harness.check.findings import Finding, HistoryOutcome, crash_site, oracle_point, site_key
from crashcheck.harness.check import determinism, threads, trace_digest
from crashcheck.harness.check.hangs import hang_words
from crashcheck.harness.core.counts import json_int
from crashcheck.harness.core.errors import UsageError
from crashcheck.harness.core.paths import relative_record, source
from crashcheck.harness.target import structures
from crashcheck.harness.core.settings import Settings
from crashcheck.specs import registry
from crashcheck.specs.model import Model

CONTEXT_LINES = 3
RECORD_FORMAT = 1       # the "crashcheck" field; harness/triage/record_formats.py reads it (FORMAT)


def region_prefix(region: int | None) -> str:
    """How an offset in region REGION is written: "+0x10" in the pool, "r1+0x10" past it."""
    return f"r{region}" if region else ""


def site_dict(trace: Trace, site_id: int) -> dict | None:
    site = trace.site(site_id)
    return site.as_dict() if site is not None else None


def state_json(model: Model, state) -> object:
    """A model state in the JSON form of records (the model's own: [[key, value], ...] for a map)."""
    if state is None:
        return None
    return model.state_json(state)


def _store(trace: Trace, p: Piece) -> dict:
    """One lost or persisted piece; a piece of a store wider than the failure-atomic unit also
    says which part of which store it is (store_size, part)."""
    ev = trace.events[p.seq]
    out = {"seq": p.seq, "off": p.off, "size": len(p.data), "data": p.data.hex(),
           "site": site_dict(trace, ev.site)}
    if p.region:
        out["region"] = p.region        # a region past the pool (off is its offset there)
    if ev.size != len(p.data):
        out["store_size"], out["part"] = ev.size, p.part
    return out


def _event_store(trace: Trace, seq: int) -> dict:
    """Store event SEQ of TRACE, whole, in the shape of a lost or persisted piece."""
    ev = trace.events[seq]
    out = {"seq": seq, "off": ev.off, "size": ev.size, "data": bytes(ev.data).hex(),
           "site": site_dict(trace, ev.site)}
    if ev.region:
        out["region"] = ev.region
    return out


def _timeline(trace: Trace, f: Finding) -> list[dict]:
    """Events of the operation in flight (or the last one begun) up to the crash, then the crash
    marker and the events right after it that never happened."""
    cp = f.point
    end = cp.event
    start = 0
    for i in range(min(end, len(trace.events)) - 1, -1, -1):
        if trace.events[i].kind == "op_begin":
            start = i
            break
    lost = {p.seq for p in f.lost}
    kept = {p.seq for p in f.kept}
    out = []
    for ev in trace.events[start:end]:
        if ev.kind not in ("store", "ntstore", "flush", "fence", "op_begin", "op_end"):
            continue
        site = trace.site(ev.site)
        entry = {"seq": ev.seq, "kind": ev.kind, "sub": ev.sub, "off": ev.off, "size": ev.size,
                 "line": site.line if site else 0}
        if ev.kind in ("store", "ntstore"):
            entry["state"] = "lost" if ev.seq in lost else "persisted" if ev.seq in kept else "durable"
        out.append(entry)
    out.append({"seq": end, "kind": "crash"})
    return out


def _sources(sites: list[dict | None]) -> dict:
    """A few lines around every site, read now so the record is self-contained."""
    out: dict[str, dict] = {}
    cache: dict[str, list[str] | None] = {}
    for site in sites:
        if not site or not site.get("file") or not site.get("line"):
            continue
        for s in (site, site.get("inlined_at")):
            if not s or not s.get("line"):
                continue
            key = f"{s['file']}:{s['line']}"
            if key in out:
                continue
            if s["file"] not in cache:
                try:
                    cache[s["file"]] = source(s["file"]).read_text(errors="replace").splitlines()
                except OSError:
                    cache[s["file"]] = None
            text = cache[s["file"]]
            if text is None:
                continue
            lo = max(1, s["line"] - CONTEXT_LINES)
            hi = min(len(text), s["line"] + CONTEXT_LINES)
            out[key] = {"file": s["file"], "line": s["line"], "lines": [[n, text[n - 1]] for n in range(lo, hi + 1)]}
    return out


def _coverage(f: Finding) -> dict | None:
    """How much of the finding's crash point was explored: every legal state (exhaustive) or a
    sample (bounded). None for findings without a crash point."""
    if f.coverage is None:
        return None
    legal, explored = f.coverage
    return {"legal": json_int(legal), "explored": json_int(explored), "exhaustive": explored >= legal}


def _hung(f: Finding) -> dict | None:
    """How many states of the finding's crash point hung its way (harness/check/hangs.py), or None."""
    h = f.hung
    if h is None:
        return None
    return {"states": h.states, "explored": json_int(f.coverage[1]) if f.coverage else None, "full": h.full,
            "short": h.short, "short_ms": h.short_ms, "history_states": h.history_states,
            "history_points": h.history_points}


def _digest(outcome: HistoryOutcome, f: Finding, structure: str, bug: str | None) -> dict | None:
    """The fingerprint of the history's trace up to the finding's crash point (all of it for a
    finding of the run without crash or of a crash inside recovery) and of the driver that
    traced it; None without a trace. A nondeterminism finding's runs differ by definition: its
    fingerprint holds no events, only the driver's digest (replay tells by it whether the driver
    that was seen to differ is the one it runs again: harness/cli/cmd_replay.py)."""
    if outcome.trace is None:
        return None
    end = 0 if f.cls == determinism.CLASS else (
        f.point.event if f.point is not None and f.recovery_trace is None else None)
    try:
        driver = structures.get(structure).driver(bug)
    except UsageError:          # a structure only this run knows: the events alone are compared
        driver = None
    return trace_digest.fingerprint(outcome.trace, end, driver)


def build_record(*, structure: str, bug: str | None, settings: Settings, outcome: HistoryOutcome,
                 finding: Finding, ident: str, bugdir: Path,
                 members: list[tuple[Finding, Trace | None]] | None = None,
                 first_seen_s: float | None = None, shrink: dict | None = None) -> dict:
    """The record of FINDING (of OUTCOME) under the id IDENT. MEMBERS: the findings of the bug it
    shows, as merged (harness/triage/bugs.py merge; FINDING's first, each with its history's
    trace): the record then says the bug's cause, its other symptoms and its store orders.
    FIRST_SEEN_S: seconds into the run it was first seen. SHRINK: how far its history and crash
    state were shrunk (harness/run/search.py), else neither was tried (a bug as first seen)."""
    f = finding
    model = outcome.model or registry.get("ordered_map")
    # A crash inside recovery lives in the trace of that recovery run.
    trace = f.recovery_trace if f.recovery_trace is not None else outcome.trace
    cp = f.point
    verdict = f.verdict
    threaded = outcome.ops if threads.is_threaded(outcome.ops) else None
    record = {
        "crashcheck": RECORD_FORMAT,
        "id": ident,
        "class": f.cls,
        "expected": f.expected,
        "expected_reason": f.expected_reason,
        "structure": structure,
        "bug": bug,
        "model": settings.model,
        # what every verdict assumed (persistency model, failure-atomic unit): replay uses the same
        "assumptions": settings.assumptions(),
        "seed": settings.seed,
        "strategy": settings.strategy,
        "limit": settings.limit,
        "tracer": settings.tracer,
        "spec_model": model.name,
        "history": [model.op_text(op) for op in outcome.ops],
        "load": getattr(outcome.ops, "load", 0),
        # a threaded run traces its load (only one thread's trace starts at the checked operations)
        "load_traced": threaded is not None or bool(getattr(outcome.ops, "load_traced", False)),
        # what ran after this state's recovery: the continuation aimed at its crash (a verdict
        # without one, e.g. of the crash-free run: the history's follow-up)
        "followup": [model.op_text(op) for op in (verdict.followup if verdict and verdict.followup
                                                    else outcome.followup)],
        "followup_outputs": list(verdict.followup_outputs) if verdict else [],
        "recovered_state": verdict.recovered if verdict else "",
        # the same operations fail the same way without any crash (harness/check/without_crash.py)
        "without_crash": f.without_crash.detail if f.without_crash is not None else "",
        "detail": f.detail + hang_words(f.hung, f.coverage[1] if f.coverage else None, settings.timeout_ms),
        "group": f.group[1],
        "occurrences": f.occurrences,
        "shrink": dict(shrink) if shrink else {"history": "not tried",
                                                "crash_state": "not tried" if f.point is not None
                                                else "no crash state"},
        "crash": None,
        "lost": [],
        "persisted": [],
        "code_pointers": [],
        "sites": [],
        "expected_states": [state_json(model, s) for s in verdict.expected] if verdict else [],
        "actual": state_json(model, verdict.actual) if verdict else None,
        "coverage": _coverage(f),
        "hung": _hung(f),
        "leaks": f.leaks,
        "recovery_of": ({"index": f.recovery_of[0], "choice": list(f.recovery_of[1])}
                        if f.recovery_of is not None else None),
        "timeline": [],
        "sources": {},
        "replay": f"crashcheck replay {shlex.quote(str(bugdir / (ident + '.json')))}",
        # threaded histories (harness/check/threads.py): each operation's thread (0: the load phase),
        # the scheduler setting, and the schedule the run took, which replay runs again exactly
        "threads": threaded.nthreads if threaded is not None else 1,
        "thread_of": list(threaded.thread_of) if threaded is not None else [],
        "sched": threaded.sched if threaded is not None else None,
        "schedule": outcome.schedule,
        # the picture of a threaded run (harness/triage/lanes.py), all on the trace's event axis
        "lanes": [],
        "preemptions": [],
        "lanes_crash": None,
        # an ordering bug's fix, proven on the trace (harness/check/fix_search.py); null otherwise
        "fix": fix_json(f.fix),
        # what `replay` compares its run with, so "fixed" means the same run no longer fails
        "trace_digest": _digest(outcome, f, structure, bug),
    }
    if threaded is not None and outcome.run_trace is not None:
        run = outcome.run_trace
        record["lanes"] = lanes.lanes(model, outcome.ops, outcome.lines, run)
        record["preemptions"] = lanes.preemptions(run)
        if cp is not None and trace is run:
            record["lanes_crash"] = cp.event
    if trace is not None and cp is not None:
        point = oracle_point(cp, len(outcome.ops))
        if f.history_point is not None:
            # a crash inside recovery: the history's position is that of the original crash
            point = f.history_point
        crash_at = site_dict(trace, crash_site(trace, cp))
        kind = trace.events[cp.event].kind if cp.event < len(trace.events) else "end"
        record["crash"] = {"event": cp.event, "index": cp.index, "kind": kind, "op": cp.op,
                           "done": point.done, "inflight": point.inflight, "site": crash_at,
                           "choice": list(f.choice)}
        record["lost"] = [_store(trace, p) for p in f.lost]
        record["persisted"] = [_store(trace, p) for p in f.kept]
        # a structure on a libpmemobj built with the pass: the calls that led to each library store
        from crashcheck.harness.triage.pmdk_calls import name_calls     # it imports site_dict from here
        name_calls(trace, record["lost"] + record["persisted"])
        sites = []
        for p in f.lost:
            # a store through a header helper (store8, persist.h) is named by the line that
            # called it, as in the bug's cause: every store of the structure shares the helper's
            key = site_key(trace, trace.events[p.seq].site)
            if key != "?" and key not in sites:
                sites.append(key)
        record["sites"] = sites
        record["timeline"] = _timeline(trace, f)
        record["sources"] = _sources([crash_at] + [s["site"] for s in record["lost"][:6]]
                                     + [s["site"] for s in record["persisted"][:3]]
                                     + [leak.get("site") for leak in f.leaks[:3]])
    else:
        record["crash"] = {"event": None, "index": None, "kind": "none", "op": None, "done": len(outcome.ops),
                           "inflight": None, "site": None, "choice": []}
    if f.stores and trace is not None:
        # code-pointer-in-pm: the stores of code addresses into PM, named with their sources
        record["code_pointers"] = [_event_store(trace, seq) for seq in f.stores[:16]]
        record["sources"] = _sources([s["site"] for s in record["code_pointers"][:6]])
    if members:
        view = (lambda m: m[0], lambda m: m[1])
        record["cause"] = list(bugs.cause(members[0][1], members[0][0]))
        record["symptoms"] = bugs.symptoms(members, *view)
        # members of other minimal lost stores, in the bug because its fix removes their failure
        record["folded_by_fix"] = bugs.folded_by_fix(members, *view)
        if f.fix is None or not f.fix.found:
            # the bug's fix is the one a member found (the others' failures it removes)
            found = next((m[0].fix for m in members if m[0].fix is not None and m[0].fix.found), None)
            if found is not None:
                record["fix"] = fix_json(found)
        record["classes"] = bugs.classes(members, view[0])
        record["orders"] = bugs.orders(members, *view)
    if first_seen_s is not None:
        record["first_seen_s"] = round(first_seen_s, 2)
    # the sources are read: from here on files are named for people on other machines
    return relative_record(record)

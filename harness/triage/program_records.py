"""Bug records of program mode (`crashcheck run`): a shrunk program finding as the JSON of
docs/bug-record.md, and the findings of many runs as bugs.

Owns the record of a program finding: the fields every record has (crash point, lost and
persisted stores with sites, timeline, source excerpts, coverage, assumptions), the operation
names in place of a history, and a `program` object that says how to run it again (the program's
arguments as run, the commands, the tracer, the schedule a threaded run took); plus grouping:
findings of one class whose shrunk states lose stores at the same source lines (or, losing none,
that crash at the same line) are one bug, whichever run or schedule found them. The record of a
bug is its example that loses the fewest stores. Never runs anything and never renders HTML.
"""
from __future__ import annotations

import os
import shlex
from pathlib import Path

from crashcheck.harness.check.findings import crash_site, site_key
from crashcheck.harness.check.program_check import telling_line
from crashcheck.harness.check.program_explore import ProgramFinding
from crashcheck.harness.core.counts import json_int
from crashcheck.harness.check.trace_digest import fingerprint
from crashcheck.harness.core.paths import relative_record
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.target.program import TracedProgram
from crashcheck.harness.triage.pmdk_calls import name_calls
from crashcheck.harness.triage.records import RECORD_FORMAT, _sources, _store, _timeline, site_dict

OUTPUT_CHARS = 4096            # of the failing command's output kept in a record


def group_of(finding: ProgramFinding, traced: TracedProgram) -> str:
    """What makes findings of one class one bug: the lines of the stores the shrunk state loses;
    with none lost, the lines of the kept stores it needs; with neither, the crash's line."""
    trace = traced.trace
    sites = sorted({site_key(trace, trace.events[p.seq].site) for p in finding.lost})
    if sites:
        return "lost: " + ", ".join(sites)
    kept = sorted({site_key(trace, trace.events[p.seq].site) for p in finding.needed})
    if kept:
        return "persisted: " + ", ".join(kept)
    return "crash@" + site_key(trace, crash_site(trace, finding.point), caller=True)


def _op_text(traced: TracedProgram, op: int | None) -> str:
    if op is None:
        return "between operations" if traced.marked else "the whole run"
    return f"{traced.ops.get(op, f'operation {op}')} (operation {op})"


def build(finding: ProgramFinding, traced: TracedProgram, *, name: str, settings: Settings,
          program: dict, ident: str, bugdir: Path) -> dict:
    """The record of FINDING in the run TRACED (PROGRAM: the `program` object, without the argv
    as run, which comes from TRACED)."""
    trace = traced.trace
    cp = finding.point
    v = finding.verdict
    crash_at = site_dict(trace, crash_site(trace, cp))
    kind = trace.events[cp.event].kind if cp.event < len(trace.events) else "end"
    lost = [_store(trace, p) for p in finding.lost]
    kept = [_store(trace, p) for p in finding.kept]
    name_calls(trace, lost + kept)    # an instrumented libpmemobj: the calls that led to each store
    sites: list[str] = []
    for p in finding.lost:
        key = site_key(trace, trace.events[p.seq].site)
        if key != "?" and key not in sites:
            sites.append(key)
    where = _op_text(traced, cp.op)
    why = telling_line(v)
    detail = f"{v.how} after a crash during {where}" + (f": {why[:300]}" if why else "")
    history = [traced.ops[k] for k in sorted(traced.ops)] if traced.ops else ["(the whole run)"]
    legal, explored = finding.coverage
    record = {
        "crashcheck": RECORD_FORMAT, "id": ident, "class": v.cls, "structure": name, "bug": None,
        "expected": False, "expected_reason": None,
        "model": settings.model, "strategy": settings.strategy, "seed": settings.seed, "limit": settings.limit,
        "tracer": settings.tracer, "assumptions": settings.assumptions(), "spec_model": "program",
        "history": history, "load": 0, "followup": [], "followup_outputs": [],
        "crash": {"event": cp.event, "index": cp.index, "kind": kind, "op": cp.op,
                  "done": 0 if cp.last_done is None else cp.last_done + 1, "inflight": cp.op,
                  "site": crash_at, "choice": list(finding.choice)},
        "detail": detail, "group": group_of(finding, traced), "occurrences": finding.occurrences,
        "lost": lost, "persisted": kept, "sites": sites, "expected_states": [], "actual": None,
        "leaks": [], "coverage": {"legal": json_int(legal), "explored": json_int(explored), "exhaustive": explored >= legal},
        "hung": None, "timeline": _timeline(trace, finding),
        "sources": _sources([crash_at] + [s["site"] for s in lost[:6]] + [s["site"] for s in kept[:3]]),
        "replay": f"crashcheck replay {shlex.quote(str(bugdir / (ident + '.json')))}",
        # threads of the run (with a schedule, the deterministic scheduler's interleaving; the
        # record has no per-operation thread sections, so no lanes)
        "threads": max(1, len({ev.tid for ev in trace.events})),
        "sched": program.get("sched"), "schedule": traced.schedule,
        "cause": sorted(set(sites) | {site_key(trace, trace.events[p.seq].site) for p in finding.needed}),
        "symptoms": [], "orders": [],
        # a program has no history to shrink; its failing state is shrunk (program_shrink.shrink)
        # unless --budget ran out first (then as far as it got)
        "shrink": {"history": "not tried", "crash_state": "cut by the budget" if finding.unshrunk else "done"},
        "output": v.output[-OUTPUT_CHARS:],
        # what `replay` compares its run with (harness/check/trace_digest.py)
        "trace_digest": fingerprint(trace, cp.event, traced.argv[0]),
    }
    record = relative_record(record)
    record["program"] = _runnable({**program, "argv": list(traced.argv), "operation": where})
    return record


def _runnable(program: dict) -> dict:
    """PROGRAM's argv and commands as replay runs them again: from the folder crashcheck ran in,
    so a path inside that folder becomes ./PATH. Not relative_record's rule (which strips the
    project root too, and leaves a bare NAME that replay would look up on PATH)."""
    here = os.path.normpath(os.getcwd())
    if here == os.sep:
        return program
    inside = here + os.sep

    def rel(text):
        return text.replace(inside, "./") if isinstance(text, str) else text
    out = {k: rel(v) for k, v in program.items()}
    out["argv"] = [rel(a) for a in program["argv"]]
    if "/" not in out["argv"][0]:
        out["argv"][0] = "./" + out["argv"][0]      # as run: a path relative to that folder
    return out


def merge(found: list[dict], bugdir: Path) -> list[dict]:
    """Records of many runs as bugs: one per (class, group), its example the one losing the
    fewest stores (then the first found), occurrences added up; ids renumbered in the order the
    bugs were first found."""
    bugs: dict[tuple[str, str], dict] = {}
    for rec in found:
        key = (rec["class"], rec["group"])
        have = bugs.get(key)
        if have is None:
            bugs[key] = dict(rec)
            continue
        total = have["occurrences"] + rec["occurrences"]
        if len(rec["lost"]) < len(have["lost"]):
            bugs[key] = dict(rec)
        bugs[key]["occurrences"] = total
    out = list(bugs.values())
    counts: dict[str, int] = {}
    for rec in out:
        n = counts[rec["class"]] = counts.get(rec["class"], 0) + 1
        rec["id"] = f"{rec['structure']}-{rec['class']}-{n}"
        rec["replay"] = f"crashcheck replay {shlex.quote(str(bugdir / (rec['id'] + '.json')))}"
    return out


__all__ = ["build", "group_of", "merge"]

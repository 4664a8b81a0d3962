"""Crash exploration of one history on one tree driver, for the thesis trees' crash tests, made of
the project's own parts only: the traced driver records the history, crashsim simulates it
(crashcheck.crashsim.simulate: x86-ADR with clflush treated as clflushopt, 8-byte failure-atomic pieces),
chooses crash states (crashcheck.crashsim.states) and checks each one in the driver's runner (`serve`,
crashcheck.crashsim.runner_client), and specs judges them (the ordered map model, crashcheck.specs.oracle.judge_recovery with
the model's follow-up workload, and the leak rule of specs/leaks.py with the tree's expect.json).
Nothing here decides what is a bug: the tests assert on the verdicts the fuzzer would report.

Crash states, at every crash point from the first operation on (pool formatting and the tree's
create are set-up): crashsim's bounded strategy (every legal state of a point with at most LIMIT
of them; beyond that its boundary states, each unit alone at every intermediate prefix, and seeded
random ones), plus each pending cache line alone at each prefix with every other unit held at its
guarantee. Those are the states these tests' own simulator explored before they used crashsim's,
so the tests still cover at least what they did where the bounded strategy samples.
"""
from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from crashcheck.crashsim import CheckResult, CrashPoint, Runner, Simulator, StateCodec, Trace, read_trace, select
from crashcheck.crashsim.image import encode_writes
from crashcheck.harness.check.pipeline import oracle_point, result_dict
from crashcheck.specs import leaks
from crashcheck.specs import model as spec_model
from crashcheck.specs.oracle import judge_recovery
from crashcheck.specs.ordered_map import MODEL
from treeutil import ROOT

POOL_SIZE = 512 << 10
LIMIT = 100          # legal states per crash point explored exhaustively (crashsim's default)

Choice = tuple[int, ...]


@dataclass(frozen=True)
class Finding:
    """One crash state specs does not accept (or the crash-free run, `where` "no crash")."""
    cls: str
    where: str
    detail: str
    expected: bool = False      # a leak the tree's expect.json declares for the operation in flight
    between_ops: bool = False   # the crash came at an operation's end or between operations


def known_leaks(tree: str) -> list[dict]:
    """The by-design leaks TREE declares (trees/<tree>/expect.json "known")."""
    path = ROOT / "trees" / tree / "expect.json"
    return json.loads(path.read_text()).get("known", []) if path.exists() else []


def one_unit_states(radices: list[int]) -> list[Choice]:
    """Nothing pending persisted, then each pending unit (a cache line's pieces) alone at each
    prefix length, the rest held back."""
    none = tuple(0 for _ in radices)
    return [none] + [none[:j] + (k,) + none[j + 1:] for j, m in enumerate(radices) for k in range(1, m + 1)]


def crash_states(trace: Trace, runner: Runner, followup: str, first_event: int, limit: int
                 ) -> Iterator[tuple[CrashPoint, Choice, CheckResult]]:
    """(crash point, choice, result) of every state chosen at every crash point at or after
    FIRST_EVENT (see the module note), each image checked once in RUNNER."""
    sim = Simulator.from_trace(trace)
    runner.queue_base(trace.regions[0].image)
    seen: dict[int, int] = {}                     # image fingerprint -> state id checked
    results: dict[int, CheckResult] = {}
    for cp in sim.crash_points():
        if cp.patch:
            runner.queue_patch(encode_writes(cp.patch))
        if cp.event < first_event:
            continue
        codec = StateCodec(cp, sim.image)
        chosen = dict.fromkeys(map(tuple, select(cp, "bounded", limit)))
        chosen.update(dict.fromkeys(one_unit_states(cp.radices)))
        ids = []
        for choice in chosen:
            fp, writes = codec.encode(choice)
            if fp not in seen:
                seen[fp] = runner.next_state
                runner.queue_state(runner.next_state, writes, followup)
            ids.append(seen[fp])
        results.update(runner.flush())
        for choice, sid in zip(chosen, ids):
            yield cp, choice, results[sid]


def crash_findings(driver: Path, tmp: Path, history: list[str], *, tree: str, stop_at: str | None = None,
                   limit: int = LIMIT) -> list[Finding]:
    """Run HISTORY (lines of the driver's language) on DRIVER traced, explore and judge every
    crash state; returns every finding (leaks TREE's expect.json declares among them, marked
    `expected`), or those up to the first unexpected one of class STOP_AT."""
    ops = [MODEL.parse_op(line) for line in history]
    trace_path = tmp / "trace"
    env = {k: v for k, v in os.environ.items() if k != "CRASHCHECK_TRACE"}
    ran = subprocess.run([str(driver), "run", "--pool", str(tmp / "pool"), "--create", "--size", str(POOL_SIZE)],
                         input="".join(line + "\n" for line in history), capture_output=True, text=True,
                         env=dict(env, CRASHCHECK_TRACE=str(trace_path)), timeout=60)
    assert ran.returncode == 0, ran.stderr
    findings: list[Finding] = []
    bad = spec_model.replay(MODEL, ops, ran.stdout.splitlines(), [MODEL.init()])
    if bad is not None:
        findings.append(Finding("wrong-value", "no crash", f"`{history[bad[0]]}` returned another result "
                                f"than the model's {bad[2]}"))
    trace = read_trace(trace_path)
    assert trace.complete and trace.regions, "the traced driver wrote no complete trace"
    states = [s[0] for s in spec_model.prefix_states(MODEL, ops)]
    follow = MODEL.followup(ops)
    follow_text = "".join(MODEL.op_text(op) + "\n" for op in follow)
    first_op = next(i for i, ev in enumerate(trace.events) if ev.kind == "op_begin")
    known = known_leaks(tree)
    index = leaks.LeakIndex(trace)
    verdicts: dict[tuple, tuple] = {}
    with Runner([str(driver), "serve", "--size", str(POOL_SIZE)], env=env) as runner:
        for cp, choice, res in crash_states(trace, runner, follow_text, first_op, limit):
            if stop_at is not None and any(f.cls == stop_at and not f.expected for f in findings):
                break
            point = oracle_point(cp, len(ops))
            where = f"crash point {cp.index} ({cp.kind}, op {cp.op}), state {choice}"
            between = cp.op is None or cp.kind == "op_end"
            key = (res.first, point.done, point.inflight, cp.event)
            if key not in verdicts:
                verdict = judge_recovery(ops, point, result_dict(res), follow, states)
                leaked = leaks.unreachable(res.result) if verdict.ok or verdict.cls != "recovery-crash" else []
                objs = index.attribute(leaked, cp.event) if leaked else []
                declared = leaks.expected(known, objs, index.touched_in_flight(cp.event)) if objs else None
                verdicts[key] = (verdict, objs, declared)
            verdict, objs, declared = verdicts[key]
            if not verdict.ok:
                findings.append(Finding(verdict.cls, where, verdict.detail, between_ops=between))
            if objs:
                findings.append(Finding("leak", where, leaks.describe(objs), expected=declared is not None,
                                        between_ops=between))
    return findings

"""Whether a crash state's failure needs the crash at all.

Owns one question asked of a finding once its crash state is shrunk: when the state loses no
store and needs none persisted (its image is the crash-free one at that point), recovery left an
acceptable state, and only what ran after recovery failed (a wrong answer of the continuation, or
rules its operations broke), do the same operations fail the same way without any crash and
without recovery: the history up to the state recovery matched, then the same follow-up, as one
crash-free run. If they do, the failure is the crash-free run's bug (a logic mistake the
continuation reached, not a crash-consistency one), and the finding carries that run's finding
(`Finding.without_crash`), by which harness/triage/bugs.py makes it one bug with the crash-free
findings of the same mistake. "The same way": the crash-free run breaks one of the rules the
finding broke, or answers wrong at the same follow-up operation with the same answer. Never shrinks
anything and never reports.
"""
from __future__ import annotations

from crashcheck.harness.check.crash_free import crash_free_findings, first_failing_op
from crashcheck.harness.check.crash_oracle import SequentialOracle
from crashcheck.harness.check.findings import Finding, address_free, new_stores
from crashcheck.harness.check.traced_run import RunFailure
from crashcheck.harness.core.errors import DriverFailure
from crashcheck.specs.model import Model, replay, with_load


def failure_signs(model: Model, follow: list, f: Finding) -> tuple[set[str], tuple[int, str] | None]:
    """What F's follow-up showed: the rules broken (without addresses and numbers), and its first
    wrong answer (follow-up index, the answer) judged from the recovered state."""
    body = f.result.result if f.result is not None and isinstance(f.result.result, dict) else {}
    rules = {address_free(v) for v in (body.get("violations") or []) + (body.get("followup_violations") or [])
             if isinstance(v, str)}
    wrong = None
    v = f.verdict
    if v is not None and v.actual is not None and follow:
        got = [str(x) for x in body.get("followup", [])]
        bad = replay(model, follow[:len(got)], got, [v.actual])
        if bad is not None:
            wrong = (bad[0], got[bad[0]])
    return rules, wrong


def prefix_matched(oracle: SequentialOracle, f: Finding) -> int | None:
    """How many operations of the history the state recovery matched has applied (the completed
    ones, or those and the one in flight), or None if it matched none."""
    v = f.verdict
    if v is None or v.matched is None:
        return None
    point = oracle.history_point(f.point)
    if point.inflight is None:
        return point.done
    if oracle.model.member(v.matched, oracle.sets[point.done]) is not None:
        return point.done
    if oracle.model.member(v.matched, oracle.sets[point.inflight + 1]) is not None:
        return point.inflight + 1
    return None


def without_crash(checker, ops: list, oracle: SequentialOracle, f: Finding) -> Finding | None:
    """The crash-free run's finding that F's failure also is (see the module note), or None.
    CHECKER traces the run (harness/check/pipeline.py Checker.trace)."""
    if f.point is None or f.recovery_of is not None or f.lost or f.needed or f.cls == "leak":
        return None
    n = prefix_matched(oracle, f)
    follow = oracle.follow_at(f.point)
    if n is None or not follow:
        return None
    model = oracle.model
    rules, wrong = failure_signs(model, follow, f)
    if not rules and wrong is None:
        return None
    run = with_load(list(ops[:n]) + list(follow), min(getattr(ops, "load", 0), n))
    try:
        trace, lines = checker.trace(run)
    except (RunFailure, DriverFailure):
        return None        # (a run that dies is another question: harness/run/merge.py folds those)
    found = crash_free_findings(model, run, lines)
    if not found:
        return None
    results = [x for x in lines if not x.startswith("!")]
    broken = {address_free(x.split(" ", 2)[2]) for x in lines if x.startswith("!invariant ") and x.count(" ") >= 2}
    bad = replay(model, run, results, [model.init()])
    same_answer = (wrong is not None and bad is not None and bad[0] - n == wrong[0]
                   and results[bad[0]] == wrong[1])
    if not (rules & broken) and not same_answer:
        return None
    twin = found[0]
    twin.new_stores = new_stores(trace, first_failing_op(model, run, lines))
    return twin


__all__ = ["failure_signs", "prefix_matched", "without_crash"]

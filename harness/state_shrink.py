"""Shrinking a failing crash state to the fewest lost stores that still fail the same way.

Owns the search over one crash point's choice vectors: first let whole pending units persist,
then let each remaining unit keep as much as it can, checking candidates in batches (one pass over
the trace per batch). Hypothesis shrinks the history; this shrinks the crash state inside it.
"""
from __future__ import annotations

from crashsim.simulate import CrashPoint as SimPoint
from crashsim.trace import Trace
from harness.crash_oracle import SequentialOracle
from harness.crash_states import state_checker
from harness.findings import RECOVERY_CRASH_PREFIX, Finding
from harness.session import Session


def shrink_state(session: Session, trace: Trace, oracle: SequentialOracle, f: Finding,
                 history_cp: SimPoint | None = None) -> None:
    """Move F to the state with the fewest lost pieces that still fails with F's class, judged by
    ORACLE at HISTORY_CP (default: F's crash point; for a crash inside recovery, the original
    crash in the history's trace)."""
    cp = f.point
    radices = cp.radices
    at = history_cp or cp
    check = state_checker(session, trace, cp.index, session.history_text(oracle.follow))

    def verdict(res):
        return oracle.verdict(at, res)

    def failing(cands: list[tuple[int, ...]]) -> list[bool]:
        out = []
        for res in check(cands):
            v = verdict(res)
            out.append(not v.ok and v.cls == f.cls)
        return out

    def release(choice: tuple[int, ...], moves: list[tuple[int, int]]) -> tuple[int, ...]:
        c = list(choice)
        for j, k in moves:
            c[j] = k
        return tuple(c)

    choice = tuple(f.choice)
    # 1. Units that can persist entirely, each alone; then all of them together.
    units = [j for j in range(len(choice)) if choice[j] < radices[j]]
    cands = [release(choice, [(j, radices[j])]) for j in units]
    ok = [j for j, good in zip(units, failing(cands) if cands else []) if good]
    if ok:
        together = release(choice, [(j, radices[j]) for j in ok])
        if len(ok) == 1 or failing([together])[0]:
            choice = together
        else:
            for j in ok:      # greedy, one at a time
                cand = release(choice, [(j, radices[j])])
                if failing([cand])[0]:
                    choice = cand
    # 2. For each unit still holding pieces back, the longest prefix that still fails.
    moves, cands = [], []
    for j in range(len(choice)):
        for k in range(radices[j] - 1, choice[j], -1):
            moves.append((j, k))
            cands.append(release(choice, [(j, k)]))
    best: dict[int, int] = {}
    for (j, k), good in zip(moves, failing(cands) if cands else []):
        if good and k > best.get(j, -1):
            best[j] = k
    if best:
        together = release(choice, list(best.items()))
        if len(best) == 1 or failing([together])[0]:
            choice = together
    if choice != tuple(f.choice):
        [res] = check([choice])
        v = verdict(res)
        pre = RECOVERY_CRASH_PREFIX if f.recovery_of is not None else ""
        f.choice, f.result, f.verdict, f.detail = choice, res, v, pre + v.detail


__all__ = ["shrink_state"]

"""Program mode's shrinking of one failing state (harness/check/program_explore.py finds it): the
state with as few lost stores as one unit at a time can keep failing the same way, and the kept
stores such a failure needs persisted.

Owns the order of the tries: pending units persist whole a block at a time (halved down to single
units where a block loses the failure), then each unit left losing stores keeps its longest
prefix that still fails the same way (a local minimum). Judges through the caller's JUDGE (which
may raise OutOfTime under --budget); never explores crash points and never builds records.
"""
from __future__ import annotations

from collections import deque
from typing import Callable

from crashcheck.crashsim.persistency import Piece
from crashcheck.crashsim.simulate import CrashPoint
from crashcheck.harness.check.program_check import Verdict
from crashcheck.harness.core.budget import OutOfTime


def _full(cp: CrashPoint) -> list[int]:
    return [u.choices - 1 for u in cp.units]


def shrink(cp: CrashPoint, choice: tuple[int, ...], verdict: Verdict,
           judge: Callable[[tuple[int, ...]], Verdict]) -> tuple[tuple[int, ...], Verdict, bool]:
    """CHOICE (failing with VERDICT) with as few lost stores as one unit at a time can keep failing
    the same way (see the module note), its verdict, and whether a JUDGE raising OutOfTime
    (--budget) ended it first (then the failing state shrunk so far)."""
    full = _full(cp)
    best = [list(choice), verdict]
    try:
        _shrink(cp, full, best, judge)
    except OutOfTime:
        return tuple(best[0]), best[1], True
    return tuple(best[0]), best[1], False


def _shrink(cp: CrashPoint, full: list[int], best: list, judge: Callable[[tuple[int, ...]], Verdict]) -> None:
    cur, verdict = best
    # Let the units persist whole a block at a time, left to right: a block whose persisting keeps
    # the failure goes at once, one that loses it is split in halves, down to single units (the
    # one-at-a-time test: a unit left losing stores is one whose persisting alone lost the
    # failure). A failure needs few of a point's units lost (often one line, or none: what did
    # persist broke it), so this judges about 2 log2(units) states per needed unit instead of one
    # per unit (a libpmemobj redo log's point: a hundred lines pending).
    blocks = deque([[j for j in range(len(cur)) if cur[j] != full[j]]])
    while blocks:
        block = blocks.popleft()
        if not block:
            continue
        trial = cur.copy()
        for j in block:
            trial[j] = full[j]
        v = judge(tuple(trial))
        if verdict.same(v):
            cur, verdict = trial, v
            best[:] = cur, verdict
        elif len(block) > 1:
            half = len(block) // 2
            blocks.extendleft([block[half:], block[:half]])
    for j, unit in enumerate(cp.units):
        if cur[j] == full[j] or unit.orders is not None:
            continue          # (a memset's unordered subsets have no "longer prefix" order)
        for k in range(full[j] - 1, cur[j], -1):
            trial = cur.copy()
            trial[j] = k
            v = judge(tuple(trial))
            if verdict.same(v):
                cur, verdict = trial, v
                best[:] = cur, verdict
                break


# Pending units tried when looking for the kept stores a failure needs (each try runs the commands).
NEEDED_TRIES = 16


def needed(cp: CrashPoint, choice: tuple[int, ...], judge: Callable[[tuple[int, ...]], Verdict]) -> list[Piece]:
    """The kept stores of CHOICE that the failure needs: each unit's last kept store whose loss
    makes the state pass (a failure that loses nothing is caused by what did persist: a change
    published too early, a change its transaction never logged). Those found before a JUDGE
    raising OutOfTime (--budget)."""
    out: list[Piece] = []
    try:
        _needed(cp, choice, judge, out)
    except OutOfTime:
        pass
    return out


def _needed(cp, choice, judge, out) -> None:
    tries = 0
    for j, unit in enumerate(cp.units):
        if choice[j] == 0 or unit.orders is not None:
            continue
        if tries == NEEDED_TRIES:
            break
        tries += 1
        trial = list(choice)
        trial[j] -= 1
        if judge(tuple(trial)).ok:
            out.append(unit.pieces[choice[j] - 1])


__all__ = ["NEEDED_TRIES", "needed", "shrink"]

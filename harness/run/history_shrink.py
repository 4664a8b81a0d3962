"""A bug's history shrunk after the batches, within its own share of the shrinking reserve, when
the batch that found it did not shrink it (Hypothesis shrank another class there, or the batch's
shrink budget ran out first).

Owns the greedy removal of checked operations (the load phase and one checked operation stay): chunks of half the
operations, then of a quarter, down to single operations, from the end, each candidate history
checked in full (crash states too, with the Checker every history goes through) and kept when it
still fails in the example's group. It ends when no single operation can go (`done`), at its
deadline or after MAX_TRIES checks (`cut by the budget`). Never shrinks a crash state
(harness/check/state_shrink.py does, next).
"""
from __future__ import annotations

import time

from crashcheck.crashsim.runner_client import Stopped
from crashcheck.harness.check import threads
from crashcheck.harness.check.findings import Finding, HistoryOutcome
from crashcheck.harness.core.budget import OutOfTime
from crashcheck.harness.core.errors import DriverFailure
from crashcheck.specs.model import with_load

# candidate histories checked per bug at most (a count, so that an --examples run stays
# deterministic; a time budget cuts it sooner)
MAX_TRIES = 8


def shrinkable(outcome: HistoryOutcome, f: Finding) -> bool:
    """OUTCOME's history can be shrunk here: an unexpected finding of a run with a trace, one
    thread, more than one operation, no load phase (a capacity history's load is the pattern that
    crosses the point, and its checked part is short already)."""
    return (not f.expected and outcome.trace is not None and not threads.is_threaded(outcome.ops)
            and len(outcome.ops) > 1 and not getattr(outcome.ops, "load", 0))


def shrink_history(checker, outcome: HistoryOutcome, f: Finding, until: float | None,
                   tries: int = MAX_TRIES) -> tuple[HistoryOutcome, Finding, bool]:
    """The smallest history found (its outcome and its finding of F's group) and whether the
    search ended on its own (True) or by UNTIL (time.monotonic()) or TRIES."""
    ops, best, found = list(outcome.ops), outcome, f
    load = getattr(outcome.ops, "load", 0)
    size = max(1, (len(ops) - load) // 2)
    while size >= 1:
        i = len(ops) - size
        while i >= load and len(ops) - size > load:       # (one checked operation stays)
            if tries <= 0 or (until is not None and time.monotonic() >= until):
                return best, found, False
            tries -= 1
            cand = with_load(ops[:i] + ops[i + size:], load)
            try:
                out = checker.check(cand)
            except (Stopped, OutOfTime, DriverFailure):
                return best, found, False
            same = next((g for g in out.findings if g.group == f.group and not g.expected), None)
            if same is not None and not out.partial:
                ops, best, found = list(cand), out, same
            i -= size
        size //= 2
    return best, found, True


__all__ = ["MAX_TRIES", "shrink_history", "shrinkable"]

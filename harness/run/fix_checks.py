"""A fix proven on one failing history, checked on the next ones before it is called general.

Owns keeping, per group a search found, a few other failing histories besides the example it
keeps (Entry.others), and, once the examples are shrunk and their fixes searched
(harness/check/fix_search.py), checking each fix on them: each counts in the fix's `proven_for`
or `failed_for`. Never searches a fix itself.
"""
from __future__ import annotations

from typing import Callable

from crashsim.runner_client import Stopped
from harness.check.findings import Finding, HistoryOutcome
from harness.check.pipeline import Checker
from harness.core.budget import OutOfTime
from harness.core.errors import DriverFailure
from harness.run.results import Entry

# other failing histories of a group kept to check its fix on
OTHER_HISTORIES = 3


def keep_other(entry: Entry, outcome: HistoryOutcome, f: Finding, replaces: bool) -> None:
    """OUTCOME failed with F of ENTRY's group; with REPLACES it becomes the group's example.
    Keep the history that is not the example, if a crash state failed there and fewer than
    OTHER_HISTORIES are kept."""
    other, example = (entry.outcome, outcome) if replaces else (outcome, entry.outcome)
    if f.point is None or len(entry.others) >= OTHER_HISTORIES or other.ops == example.ops:
        return
    if all(other.ops != ops for ops in entry.others):
        entry.others.append(other.ops)


def check_fixes(checker: Checker, entries, stop: Callable[[], bool]) -> None:
    """Check every fix found for ENTRIES' examples on their other failing histories, until STOP
    (or the run's time) says no more."""
    for entry in entries:
        fix = entry.finding.fix
        if fix is None or not fix.found:
            continue
        for ops in entry.others:
            if stop() or checker.budget.expired():
                return
            try:
                ok = checker.prove_fix(ops, fix.edits)
            except (Stopped, OutOfTime, DriverFailure, ValueError):
                continue
            if ok is not None:
                (fix.proven_for if ok else fix.failed_for).append([checker.model.op_text(op) for op in ops])


__all__ = ["OTHER_HISTORIES", "check_fixes", "keep_other"]

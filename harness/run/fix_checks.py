"""A fix proven on one failing history, checked on the next ones before it is called general.

Owns keeping, per group a search found, a few other failing histories besides the example it
keeps (Entry.others), and, once the examples are shrunk and their fixes searched
(harness/check/fix_search.py), checking each fix on them: each counts in the fix's `proven_for`
or `failed_for`. Never searches a fix itself.
"""
from __future__ import annotations

from typing import Callable

from crashcheck.crashsim.runner_client import Stopped
from crashcheck.harness.check.findings import Finding, HistoryOutcome
from crashcheck.harness.check.fix_search import describe, statement
from crashcheck.harness.check.pipeline import Checker
from crashcheck.harness.core.budget import OutOfTime
from crashcheck.harness.core.errors import DriverFailure
from crashcheck.harness.run.results import Entry

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


# candidates tried on the histories when a fix fails on one of them
NEXT_CANDIDATES = 8


def check_fixes(checker: Checker, entries, stop: Callable[[], bool]) -> None:
    """Check every fix found for ENTRIES' examples on their other failing histories, until STOP
    (or the run's time) says no more. A fix that fails on one of them gives way to the next
    candidate of its search that passes on the example and on every one of them, if any does
    within NEXT_CANDIDATES; else it stays, with the histories it failed on."""
    for entry in entries:
        fix = entry.finding.fix
        if fix is None or not fix.found or not entry.others:
            continue
        # the other bugs' fixes applied too: another failing history of this bug may show
        # another bug as well (Checker.known_fixes)
        also = tuple(e for words, edits in checker.known_fixes.items() if words != describe(fix.edits)
                     for e in edits)
        verdicts = _on_all(checker, entry.others, fix.edits, stop, also)
        if any(ok is False for ok in verdicts):
            for edits in fix.remaining[:NEXT_CANDIDATES]:
                if stop() or checker.budget.expired():
                    break
                fix.tried += 1
                if checker.prove_fix(entry.outcome.ops, edits, also) is not True:
                    continue
                again = _on_all(checker, entry.others, edits, stop, also)
                if all(ok is True for ok in again):
                    fix.rejected.append(f"{describe(fix.edits)}: fails on another history of the bug")
                    fix.edits, verdicts = edits, again
                    fix.statements = [statement(entry.outcome.trace, e) for e in edits]
                    break
        for ops, ok in zip(entry.others, verdicts):
            if ok is not None:
                (fix.proven_for if ok else fix.failed_for).append([checker.model.op_text(op) for op in ops])


def _on_all(checker: Checker, histories: list, edits, stop: Callable[[], bool], also: tuple = ()
            ) -> list[bool | None]:
    """Whether EDITS (with ALSO) make every crash state of each of HISTORIES pass (None: not known)."""
    out: list[bool | None] = []
    for ops in histories:
        if stop() or checker.budget.expired():
            out.append(None)
            continue
        try:
            out.append(checker.prove_fix(ops, edits, also))
        except (Stopped, OutOfTime, DriverFailure, ValueError):
            out.append(None)
    return out


__all__ = ["OTHER_HISTORIES", "check_fixes", "keep_other"]

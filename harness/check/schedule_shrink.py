"""Shrinking the schedule of a concurrency bug to the fewest forced switches that still show it.

Owns the last step of a bug found in a threaded history without any crash (linearizability
violation, deadlock, livelock, a broken invariant): Hypothesis has already shrunk the history
(fewer threads, fewer operations) and the scheduler seed, but a seed says nothing about how many
preemptions the run took. The schedule file the run left (docs/scheduler.md "The schedule file")
lists only the steps where the choice differs from the default rule (the running thread goes on
until it blocks, exits, spins or has run FAIR steps), and any list of such entries is a valid
schedule to replay. So entries are removed, a chunk at a time and then one by one, and a
candidate is kept when its replay still ends in a finding of the same class (a linearizability
violation may become a wrong value once no operations overlap: then it was never a race; a crash
or hang of an operation keeps its group, the same kind of operation ending the same way). The bug
then reads with as few forced switches as the search found (not always the fewest possible: the
search is greedy and bounded), and the record's schedule is the shrunk one, which replay runs
exactly.

Crash-state findings keep their schedule: a different interleaving is a different trace, whose
crash points the finding's crash state does not name.
"""
from __future__ import annotations

import time
from typing import Callable

from crashcheck.harness.check.findings import Finding, HistoryOutcome
from crashcheck.harness.check.threads import Threaded, make_threaded

MAX_TRIES = 48          # replays per bug, at most
MAX_SECONDS = 20.0      # and no longer than this


def entries(schedule: str) -> tuple[list[str], list[str]]:
    """(header comment lines up to the first decision, decision lines `STEP THREAD`)."""
    head, body = [], []
    for line in schedule.splitlines():
        if line.startswith("#"):
            if not body:
                head.append(line)
        elif line.strip():
            body.append(line.strip())
    return head, body


def _text(head: list[str], body: list[str]) -> str:
    return "\n".join(head + body) + "\n"


def with_schedule(ops: Threaded, schedule: str) -> Threaded:
    """OPS with its operations and threads, replaying SCHEDULE."""
    load = list(ops)[:ops.load]
    sections = [ops.section(t) for t in range(1, ops.nthreads + 1)]
    return make_threaded(load, sections, ops.sched, schedule)


def shrink_schedule(check: Callable[[Threaded], HistoryOutcome], outcome: HistoryOutcome, f: Finding,
                    deadline: float | None = None) -> HistoryOutcome | None:
    """A replay of OUTCOME's history under the shortest schedule found that still ends in F's
    class, or None when no entry could go. CHECK runs a history crash-free."""
    if not outcome.schedule:
        return None
    head, body = entries(outcome.schedule)
    if not body:
        return None
    stop = min(deadline or float("inf"), time.monotonic() + MAX_SECONDS)
    tries = 0
    best: HistoryOutcome | None = None

    def still_fails(candidate: list[str]) -> HistoryOutcome | None:
        nonlocal tries
        tries += 1
        out = check(with_schedule(outcome.ops, _text(head, candidate)))
        return out if shown(f, out) is not None else None

    def stable(out: HistoryOutcome | None) -> HistoryOutcome | None:
        # a replay's file names its input (`# strategy replay:/dev/shm/<work folder>/...`), a
        # path that differs from run to run; the record names the strategy the bug was found with
        if out is not None and out.schedule:
            strategy = next((line for line in head if line.startswith("# strategy ")), "# strategy ?")
            out.schedule = "".join(f"{strategy} (shrunk)\n" if line.startswith("# strategy replay:") else line
                                   for line in out.schedule.splitlines(keepends=True))
        return out

    chunk = max(1, len(body) // 2)
    while chunk >= 1 and body:
        i = 0
        while i < len(body):
            if tries >= MAX_TRIES or time.monotonic() >= stop:
                return stable(best)
            candidate = body[:i] + body[i + chunk:]
            out = still_fails(candidate)
            if out is not None:
                body, best = candidate, out
            else:
                i += chunk
        chunk //= 2
    return stable(best)


def shown(f: Finding, out: HistoryOutcome) -> Finding | None:
    """The finding of OUT that still shows F: one of F's class, or, for a linearizability
    violation, a wrong value its replay gave with no two operations overlapping (the same results,
    now without any interleaving to blame: harness/check/threads.py sequential_wrong_value). A crash or
    hang of an operation must keep its group too (the kind of operation and how it ended): a
    schedule under which another kind of operation dies shows another bug."""
    same = [g for g in out.findings if g.cls == f.cls
            and (g.group == f.group or f.cls not in ("operation-crash", "operation-hang"))]
    if not same and f.cls == "linearizability-violation":
        same = [g for g in out.findings if g.cls == "wrong-value" and g.group[0] == "no-crash"]
    return same[0] if same else None


def switches(schedule: str | None) -> int:
    """The forced switches a schedule file lists."""
    return len(entries(schedule)[1]) if schedule else 0


__all__ = ["entries", "shown", "shrink_schedule", "switches", "with_schedule"]

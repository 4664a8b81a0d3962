"""harness/check/schedule_shrink.py: the schedule of a concurrency bug found without a crash is cut to
fewer forced switches that still show the bug, and the shrunk schedule replays to the same class.
Real HART threaded bugs with a fixed history and scheduler seed (as in test_report_lanes.py)."""
from __future__ import annotations

from crashcheck.harness.target import structures

from crashcheck.harness.check import threads
from crashcheck.harness.check.pipeline import Checker
from crashcheck.harness.check.findings import Finding, HistoryOutcome
from crashcheck.harness.check.schedule_shrink import entries, shown, switches, with_schedule
from crashcheck.harness.core.settings import Settings

LOST_INSERT = ("mt-check-unlocked", "random:0", "insert 1 1|thread 1|insert 3 30|thread 2|insert 3 31|thread 3|lookup 3")
DEADLOCK = ("mt-lock-order", "random:1", "insert 1 1|thread 1|insert 2 5|thread 2|delete 1")

SCHEDULE = """# crashcheck-schedule 1
# strategy random:7
# fair 1000
3 1
9 2
14 0
# steps 166
# switches 3
"""


def test_entries_are_the_decision_lines_and_the_header_before_them():
    head, body = entries(SCHEDULE)
    assert head == ["# crashcheck-schedule 1", "# strategy random:7", "# fair 1000"]
    assert body == ["3 1", "9 2", "14 0"]
    assert switches(SCHEDULE) == 3 and switches(None) == 0


def test_a_crash_keeps_its_operation_kind_while_shrinking():
    release = Finding("operation-crash", "`release 2 3` (operation 4, thread 3) died",
                      ("operation-crash", "release: SIGSEGV (signal 11)"))
    trylock = Finding("operation-crash", "`trylock 1 2` (operation 0, thread 1) died",
                      ("operation-crash", "trylock: SIGSEGV (signal 11)"))
    out = HistoryOutcome([], [], None, [trylock], None)
    assert shown(release, out) is None
    out.findings.append(release)
    assert shown(release, out) is release
    # other classes keep only their class (a deadlock's cycle may change while it shrinks)
    dead = Finding("deadlock", "d", ("deadlock", "mutex"))
    assert shown(dead, HistoryOutcome([], [], None, [Finding("deadlock", "e", ("deadlock", "rwlock"))], None))


def shrunk_run(bug: str, sched: str, text: str, cls: str):
    with Checker(structures.get("hart"), bug, Settings(seed=1)) as checker:
        ops = threads.parse_text(checker.model, text.replace("|", "\n"), sched)
        out = checker.check(ops)
        f = next(f for f in out.findings if f.cls == cls)
        before = out.schedule
        checker.finalize(out, f)
        # the record's schedule replays to the same class
        again = checker.check(with_schedule(out.ops, out.schedule), crashes=False)
    return before, out, f, again


def test_linearizability_violation_schedule_shrinks_and_replays(trees_built):
    before, out, f, again = shrunk_run(*LOST_INSERT, "linearizability-violation")
    assert switches(out.schedule) < switches(before), (before, out.schedule)
    assert f"schedule shrunk from {switches(before)} forced switches to {switches(out.schedule)}" in f.detail
    assert "linearizability-violation" in {g.cls for g in again.findings}
    assert out.ops.schedule is not None and out.lines
    # the record's schedule names the strategy the bug was found with, not the replay's temp file
    assert "# strategy random:0 (shrunk)\n" in out.schedule and "replay:" not in out.schedule


def test_deadlock_schedule_shrinks_and_replays(trees_built):
    before, out, f, again = shrunk_run(*DEADLOCK, "deadlock")
    assert switches(out.schedule) <= switches(before)
    assert "deadlock" in {g.cls for g in again.findings}

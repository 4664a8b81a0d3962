"""The determinism probes of a fuzz search (harness/run/search.py `Search` inherits them).

Owns what a history's first check is compared with (`Decision`), the second crash-free run of one
history per batch (`_probe`), a history Hypothesis runs again checked a second time (`_again`), and
turning a difference into a `nondeterminism` finding (harness/check/determinism.py says what
differs). Kept apart from the search because it is a job of its own: the search decides what to
shrink, this decides whether the structure behaved the same twice.
"""
from __future__ import annotations

from dataclasses import dataclass

from crashcheck.crashsim.trace import Trace
from crashcheck.harness.check import determinism
from crashcheck.harness.check.findings import Finding, HistoryOutcome
from crashcheck.harness.check.traced_run import RunFailure
from crashcheck.harness.core.budget import OutOfTime
from crashcheck.harness.core.errors import DriverFailure, UsageError
from crashcheck.harness.run.found import Abort, not_a_failure


@dataclass
class Decision:
    """The first check of a history in a batch, and what the property answered Hypothesis."""
    crashes: bool
    trace: Trace | None
    findings: frozenset               # determinism.findings_key of its findings
    groups: set                       # the groups of all its findings
    partial: bool
    raised: type | None = None        # the Found class raised, if any
    detail: str = ""
    rechecked: bool = False           # checked a second time already (once is enough)


class DeterminismProbes:
    """Mixed into Search, whose checker, budget, call count, stats, `stored` and `_note` these use."""

    def _nondeterministic(self, ops, outcome: HistoryOutcome, trace, diff: tuple[str, str]) -> None:
        group, how = diff
        f = Finding(determinism.CLASS, determinism.describe(how), (determinism.CLASS, group))
        self._note(HistoryOutcome(ops, outcome.followup, trace, [f], self.checker.model), f)

    def _probe(self, ops, outcome: HistoryOutcome) -> None:
        """Run OPS's crash-free run a second time: the same trace and results, or a finding."""
        checker = self.checker
        try:
            again, lines = checker.trace(ops)
        except RunFailure as exc:
            if exc.finding.cls != "operation-hang":       # (a hang may be the load's doing)
                self._nondeterministic(ops, outcome, outcome.trace, (
                    "run: " + exc.finding.group[1], "the first run of it finished; in the second, "
                    + exc.finding.detail.removeprefix("without any crash, ")))
            return
        except DriverFailure as exc:
            self._nondeterministic(ops, outcome, outcome.trace, ("run", f"the first run of it finished, the "
                                                                 f"second failed: {str(exc)[:300]}"))
            return
        diff = determinism.trace_difference(outcome.trace, again, self.stored)
        if diff is None:
            first = determinism.findings_key(f for f in outcome.findings if f.point is None)
            diff = determinism.findings_difference(
                first, determinism.findings_key(checker.crash_free_findings(ops, lines, again)))
        if diff is not None:
            self._nondeterministic(ops, outcome, outcome.trace, diff)

    def _again(self, ops, first: Decision) -> None:
        """Check OPS a second time (once per batch) and compare with its first check."""
        if first.rechecked:
            return
        first.rechecked = True
        if self.budget.search_over():
            raise OutOfTime()
        self.call += 1
        try:
            outcome = self.checker.check(ops, crashes=first.crashes)
        except UsageError as exc:
            raise Abort(exc) from None
        except Exception:      # noqa: BLE001 - ours: never shrunk by Hypothesis (found.py Internal)
            raise not_a_failure(self.checker) from None
        self.stats.count(outcome)
        for f in outcome.findings:
            if f.group not in first.groups:
                self._note(outcome, f)          # kept, though the first check did not find it
        diff = None
        if first.trace is not None and outcome.trace is not None:
            diff = determinism.trace_difference(first.trace, outcome.trace, self.stored)
        if diff is None and not (first.partial or outcome.partial):
            diff = determinism.findings_difference(first.findings, determinism.findings_key(outcome.findings))
        if diff is not None:
            self._nondeterministic(ops, outcome, first.trace or outcome.trace, diff)


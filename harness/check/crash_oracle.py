"""What a recovered crash state of one history is judged against.

Owns the one step from (a crash point of the history's trace, the runner's answer for a state
there) to a Verdict, for both kinds of history:
  SequentialOracle  one thread: the model's states per prefix (specs/oracle.py judge_recovery),
                    given the operations completed and the one in flight at the crash;
  ThreadedOracle    several threads (harness/check/threads.py): durable linearizability of the History
                    up to the crash (specs/oracle.py judge_durable).
Both run the follow-up workload's check. Judging explored states (harness/check/judging.py), crashes
inside recovery (harness/check/recovery_crashes.py), shrinking a state (harness/check/state_shrink.py) and
replay all judge through an oracle, so a threaded history gets each of them as one thread does.
A crash inside recovery is judged at the original crash's point in the history's trace.
"""
from __future__ import annotations

from typing import Sequence

from crashsim.simulate import CrashPoint
from crashsim.trace import Trace
from harness.check import threads
from harness.check.findings import oracle_point, result_dict
from specs.model import Model
from specs.oracle import HistoryPoint, Verdict, judge_recovery


class SequentialOracle:
    """A history of one thread: OPS, the model's possible states after each prefix SETS, and
    the follow-up FOLLOW run after every recovery."""

    def __init__(self, model: Model, ops: list, sets: Sequence[Sequence], follow: list) -> None:
        self.model = model
        self.ops = ops
        self.sets = sets
        self.follow = follow

    def history_point(self, cp: CrashPoint) -> HistoryPoint:
        """CP in history terms: the operations completed and the one in flight."""
        return oracle_point(cp, len(self.ops))

    def key(self, cp: CrashPoint) -> tuple:
        """What a verdict at CP depends on besides the recovered answer."""
        point = self.history_point(cp)
        return (point.done, point.inflight)

    def verdict(self, cp: CrashPoint, res) -> Verdict:
        """The verdict on answer RES (crashsim.runner_client.CheckResult) for a crash at CP."""
        return judge_recovery(self.ops, self.history_point(cp), result_dict(res), self.follow,
                              model=self.model, sets=self.sets)


class ThreadedOracle(SequentialOracle):
    """A threaded history OPS traced as TRACE, whose crash-free run printed LINES (its `!call` /
    `!ret` lines give each completed operation's output)."""

    def __init__(self, model: Model, ops: threads.Threaded, trace: Trace, lines: list[str], follow: list) -> None:
        super().__init__(model, ops, [], follow)
        self.complete = threads.build_history(model, ops, lines)
        self.begin, self.end = threads.op_events(trace)
        self._at: dict[int, object] = {}

    def history(self, cp: CrashPoint):
        """The History up to CP: operations completed before it and those in flight."""
        h = self._at.get(cp.event)
        if h is None:
            h = self._at[cp.event] = threads.history_at(self.ops, self.complete, self.begin, self.end, cp.event)
        return h

    def key(self, cp: CrashPoint) -> tuple:
        return threads.crash_key(self.history(cp))

    def verdict(self, cp: CrashPoint, res) -> Verdict:
        return threads.judge_state(self.model, self.history(cp), result_dict(res), self.follow)


def oracle_for(model: Model, ops: list, trace: Trace, lines: list[str], sets_of, follow: list) -> SequentialOracle:
    """The oracle of history OPS (threaded or not) traced as TRACE with crash-free output LINES;
    SETS_OF(ops, lines) computes a one-thread history's states per prefix."""
    if threads.is_threaded(ops):
        return ThreadedOracle(model, ops, trace, lines, follow)
    return SequentialOracle(model, ops, sets_of(ops, lines), follow)


__all__ = ["SequentialOracle", "ThreadedOracle", "oracle_for"]

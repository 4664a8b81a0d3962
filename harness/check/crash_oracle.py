"""What a recovered crash state of one history is judged against.

Owns the one step from (a crash point of the history's trace, the runner's answer for a state
there) to a Verdict, for both kinds of history:
  SequentialOracle  one thread: the model's states per prefix (specs/oracle.py judge_recovery),
                    given the operations completed and the one in flight at the crash;
  ThreadedOracle    several threads (harness/check/threads.py): durable linearizability of the History
                    up to the crash (specs/oracle.py judge_durable).
One thread's history runs, after each recovery, the continuation aimed at that crash
(Session.continuation: every key looked up, a scan, the rest of the history, the crashed key's
neighbourhood), judged from the state the dump matched; several threads run the follow-up. Judging explored states (harness/check/judging.py), crashes
inside recovery (harness/check/recovery_crashes.py), shrinking a state (harness/check/state_shrink.py) and
replay all judge through an oracle, so a threaded history gets each of them as one thread does.
A crash inside recovery is judged at the original crash's point in the history's trace.
"""
from __future__ import annotations

from typing import Callable, Sequence

from crashcheck.crashsim.simulate import CrashPoint
from crashcheck.crashsim.trace import Trace
from crashcheck.harness.check import threads
from crashcheck.harness.check.findings import oracle_point, result_dict
from crashcheck.harness.check.session import history_text
from crashcheck.specs.model import Model
from crashcheck.specs.oracle import HistoryPoint, Verdict, judge_recovery


class SequentialOracle:
    """A history of one thread: OPS, the model's possible states per prefix SETS, and what runs
    after every recovery: FOLLOW, or (with CONTINUATION) CONTINUATION(done, inflight), the
    workload aimed at each crash (Session.continuation); replay passes the one its record ran."""

    def __init__(self, model: Model, ops: list, sets: Sequence[Sequence], follow: list,
                 continuation: Callable[[int, int | None], list] | None = None) -> None:
        self.model = model
        self.ops = ops
        self.sets = sets
        self.follow = follow
        self.continuation = continuation
        self._follow_at: dict[tuple, list] = {}

    def history_point(self, cp: CrashPoint) -> HistoryPoint:
        """CP in history terms: the operations completed and the one in flight."""
        return oracle_point(cp, len(self.ops))

    def key(self, cp: CrashPoint) -> tuple:
        """What a verdict at CP depends on besides the recovered answer."""
        point = self.history_point(cp)
        return (point.done, point.inflight)

    def follow_at(self, cp: CrashPoint) -> list:
        """The operations run after recovering a crash at CP (one list per crash of the history
        in history terms, computed once)."""
        if self.continuation is None:
            return self.follow
        key = self.key(cp)
        out = self._follow_at.get(key)
        if out is None:
            out = self._follow_at[key] = list(self.continuation(*key))
        return out

    def follow_text(self, cp: CrashPoint) -> str:
        """follow_at(CP) as the text the driver reads."""
        return history_text(self.model, self.follow_at(cp))

    def verdict(self, cp: CrashPoint, res) -> Verdict:
        """The verdict on answer RES (crashcheck.crashsim.runner_client.CheckResult) for a crash at CP."""
        return judge_recovery(self.ops, self.history_point(cp), result_dict(res), self.follow_at(cp),
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


def oracle_for(model: Model, ops: list, trace: Trace, lines: list[str], sets_of, follow: list,
               continuation: Callable[[int, int | None], list] | None = None) -> SequentialOracle:
    """The oracle of history OPS (threaded or not) traced as TRACE with crash-free output LINES;
    SETS_OF(ops, lines) computes a one-thread history's states per prefix. A threaded history
    runs FOLLOW after every recovery; one thread's runs CONTINUATION(done, inflight) if given."""
    if threads.is_threaded(ops):
        return ThreadedOracle(model, ops, trace, lines, follow)
    return SequentialOracle(model, ops, sets_of(ops, lines), follow, continuation)


__all__ = ["SequentialOracle", "ThreadedOracle", "oracle_for"]

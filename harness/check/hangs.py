"""Crash states whose check hung: a few full timeouts per history, not one per state.

Owns the rule that keeps a structure whose recovery, or the operations after it, hangs from
costing the whole check timeout in every crash state (before: 9 histories in 118 s), and the count
a hang finding reports. Before a history's first crash point, crashcheck.crashsim.explore sets the runner's
limit once (`Runner.queue_limit`, docs/runner-protocol.md "Limits"): the full timeout until
`hang_after` checks of the history (at any of its crash points) have run out of it, then
`hang_short_ms(timeout)`. The scope is the history, not the crash point: under lazy exploration a
hanging point has only one or two executions, so a rule per point saved nothing. HangTally reads
the answers of one history, in order:

- a check that ran out of the full limit hung, as ever;
- a check that ran out of the shorter limit hung *the same way* when its finding's group (its
  class and how it ended: `recovery: timeout`, `follow-up: lookup: timeout`) is that of a check
  of the same history that ran out of the full limit: it is judged and counted as hung;
- any other check that ran out of the shorter limit is not judged: `recheck` checks it again at
  its crash point, with the full limit first, so a state is never called hung for running out of
  the shorter limit alone. (A lazy execution checked again stands for its own state only: its
  class was cut where the shorter limit stopped it reading.)

A state answered by an earlier check's result (the same image, or what an earlier lazy execution
read) is judged by the same rule, as that check is. The runner counts the checks out of time, so a batch of states
sent before any answer came back still costs at most `hang_after` full timeouts per history
(plus those of the rechecks, each a way of hanging the history had not shown with the full
limit). A finding of a hang carries how many states of its crash point and of its history hung its
way (`Hung`, the record's `hung`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterator

from crashcheck.crashsim.explore import StateOutcome
from crashcheck.crashsim.trace import Trace
from crashcheck.harness.check import crash_states
from crashcheck.harness.core import defaults
from crashcheck.harness.core.counts import big
from crashcheck.harness.check.ranking import fold_state
from crashcheck.harness.check.findings import Finding
from crashcheck.harness.check.judging import HistoryJudge
from crashcheck.harness.check.session import Session
from crashcheck.harness.core.settings import Settings
from crashcheck.specs.oracle import STOP_SIGNALS


@dataclass
class Hung:
    """The states of one crash point that hung one way (one finding group)."""
    states: int = 0            # crash states (a lazy execution counts the states of its class)
    full: int = 0              # checks that ran out of the full time limit
    short: int = 0             # checks that ran out of the shorter limit, after checks of the
                               # history (here or at other points) had run out of the full one
    short_ms: int | None = None
    # over the whole history (HangTally.of): the states that hung this way and at how many points
    history_states: int = 0
    history_points: int = 0


def hang_limit(settings: Settings) -> tuple[int, int, int] | None:
    """The runner limit crashcheck.crashsim.explore sets before a history's first crash point (None: the
    runner's own)."""
    if settings.hang_after <= 0 or settings.timeout_ms <= 0:
        return None
    return (settings.timeout_ms, settings.hang_after, defaults.hang_short_ms(settings.timeout_ms))


class HangTally:
    """The checks out of time of one history's crash points, by point and finding group."""

    def __init__(self) -> None:
        self._points: dict[Any, dict[Any, Hung]] = {}
        self._full: dict[Any, int] = {}      # finding group -> checks of the history out of the full limit

    def take(self, out: StateOutcome, found: list[Finding]) -> bool:
        """Count OUT (judged: FOUND) if its check hung; False when it ran out of the shorter limit
        in a way no check of this history hung with the full limit (check it again)."""
        res = out.result
        if res is None or res.status != "timeout":
            return True
        way = found[0].group if found else None
        ways = self._points.setdefault(out.point.index, {})
        hung = ways.get(way)
        # the rule is the history's, so a state answered by an earlier check's result (the same
        # image, or what an earlier lazy execution read) is judged by it as that check is
        if res.limit_ms is not None and not self._full.get(way):
            return False
        if hung is None:
            hung = ways[way] = Hung()
        hung.states += getattr(out, "covers", 1)
        if out.cached_from is None:          # a state answered from the cache took no time
            if res.limit_ms is None:
                if res.signal not in STOP_SIGNALS:       # a stop is answered at once
                    hung.full += 1
                    self._full[way] = self._full.get(way, 0) + 1
            else:
                hung.short += 1
                hung.short_ms = res.limit_ms
        return True

    @property
    def short_checks(self) -> int:
        """Checks judged hung after running out of the shorter limit."""
        return sum(h.short for ways in self._points.values() for h in ways.values())

    def of(self, point_index: Any, group: Any) -> Hung | None:
        """The states of crash point POINT_INDEX that hung the way of finding group GROUP, with
        the history's totals of that way."""
        hung = self._points.get(point_index, {}).get(group)
        if hung is None:
            return None
        at = [ways[group] for ways in self._points.values() if group in ways]
        return replace(hung, history_states=sum(h.states for h in at), history_points=len(at))


def recheck(session: Session, trace: Trace, judge: HistoryJudge, tally: HangTally,
            deferred: list[StateOutcome], limit: tuple[int, int, int] | None
            ) -> Iterator[tuple[StateOutcome, list[Finding]]]:
    """Check the DEFERRED outcomes (HangTally.take said so) again at their crash points, under
    LIMIT counted anew; yield each with its findings once the tally takes it. Before each point,
    an outcome that a recheck of an earlier point has since shown to hang a way the history hung
    with the full limit is taken as it is. Ends: at every point the first check runs with the
    full limit, so each round settles at least one state there."""
    while deferred:
        by_point: dict[int, list[StateOutcome]] = {}
        for out in deferred:
            by_point.setdefault(out.point.index, []).append(out)
        deferred = []
        for index, outs in by_point.items():
            still = []
            for out in outs:
                found = fold_state(judge.judge(out))
                if tally.take(out, found):
                    yield out, found
                else:
                    still.append(out)
            outs = still
            if not outs:
                continue
            # every state of a crash point ran the same follow-up (explore's followup of the point)
            check = crash_states.state_checker(session, trace, index, outs[0].followup, limit=limit)
            for out, res in zip(outs, check([tuple(o.choice) for o in outs])):
                out.result, out.cached_from, out.covers = res, None, 1
                found = fold_state(judge.judge(out))
                if tally.take(out, found):
                    yield out, found
                else:
                    deferred.append(out)


def hang_words(hung: Hung | None, explored: int | None, timeout_ms: int) -> str:
    """'; hung in 37 of 40 states of this crash point (...)' for a finding's detail, or ''."""
    if hung is None or hung.states == 0:
        return ""
    of = f"{hung.states} of {big(explored)}" if explored else str(hung.states)
    text = f"; hung in {of} state{'s' if (explored or hung.states) != 1 else ''} of this crash point"
    if hung.short:
        text += (f" ({hung.short} of them given a shorter time limit of {hung.short_ms} ms once checks "
                 f"of this history had run out of the full {timeout_ms} ms this way, and hung the same way)")
    if hung.history_points > 1:
        text += f" and in {hung.history_states} states of {hung.history_points} crash points of this history"
    return text


__all__ = ["HangTally", "Hung", "hang_limit", "hang_words", "recheck"]

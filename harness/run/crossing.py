"""Capacity points crossed in every run: after the drawn batches leave a point short of crossings,
histories that load the structure to just below the point (never crash-checked) and check the
few operations around it (harness/check/capacity.py observes the points; specs/threshold_histories.py
draws the histories).

A mixin of harness/run/search.py's Search (it uses the search's budget, config, stats, target and
_batch), apart so the search keeps one job. Never observes points or judges a history.
"""
from __future__ import annotations

import time
from dataclasses import replace

from crashcheck.harness.check.pipeline import Checker
from crashcheck.harness.run import strategies
from crashcheck.harness.run.config import LANES

# Histories drawn to cross each capacity point in every run (`_cross_points`), and the most
# checked operations each has: the crossing operation (up to 3 with the 0-2 before it) and
# little else, so a crossing costs about what a short plain history does.
CROSS_EXAMPLES = 3
CROSS_OPS = 3
CROSS_SHARE = 0.25       # of a time budget: its last part, where the crossing histories run
# With --examples, one per point after the last batch: the count cannot depend on what this
# share's draws crossed (--jobs would change the histories), and every test run pays for it.
CROSS_FIXED = 1


class CapacityCrossing:
    """The crossing histories of a Search (capacity points: self.capacity, set by _strategies)."""

    def _crossings(self) -> list:
        """The capacity points this share draws histories to cross, as (i, point): point i's are
        run by the share that runs lane i % lanes (the same histories with any --jobs); none for
        `crashcheck check --history` (the user's history only)."""
        if self.config.history is not None:
            return []
        lanes = max(LANES, self.config.jobs)
        self.cross_left = [(i, p) for i, p in enumerate(self.capacity)
                           if not p.why and (i % lanes) % max(1, self.config.jobs) == self.share]
        return list(self.cross_left)

    def _crossing_due(self) -> bool:
        """The last CROSS_SHARE of a time budget has begun while points wait for their first
        crossing history: the batch under way is to end (search.py raises ShrinkSpent) so that
        they run. A crossing batch's own draws are never cut; its shrinking is, while other
        points wait (under x86-ADR Heart's drawn batches shrank bugs past the budget's end, and
        no crossing history ran)."""
        now = time.monotonic()
        # (called at every history's start: the longest gap is about the longest history so far)
        self.longest_s = max(getattr(self, "longest_s", 0.0), now - getattr(self, "last_call", now))
        self.last_call = now
        if not self._waiting() or (getattr(self, "crossing_now", False) and self.shrink_left is None):
            return False
        return self._share_begun()

    def _waiting(self) -> list:
        """The points still to have crossing histories run that no history crossed yet (cross_left:
        set by _crossings, then _cross_points)."""
        return [p for _i, p in getattr(self, "cross_left", ()) if not self.stats.capacity.get(p.label)]

    def _share_begun(self) -> bool:
        """Whether the crossing share of a time budget has begun: its last CROSS_SHARE, or, when
        the run's histories are slow, as long before its end as the longest history so far (one
        may be under way) and the points waiting would take at the run's mean seconds per
        history (at most half the budget): under x86-ADR a Heart history takes 5 s on average
        and one 26 s, so a quarter of 60 s often crossed none."""
        soft = self.budget.soft
        if soft is None:
            return False
        per = (time.monotonic() - self.t0) / max(1, self.stats.histories)
        slow = getattr(self, "longest_s", 0.0) + per * len(self._waiting())
        share = min(max(CROSS_SHARE * self.config.budget, slow), self.config.budget / 2)
        return soft - time.monotonic() < share

    def _cross_points(self, checker: Checker, crossing: list, last: bool) -> None:
        """In the last CROSS_SHARE of a time budget (or, LAST, after the last batch of an
        --examples run): histories that cross each point of CROSSING (taken off it), the probe's
        operations up to just before the point as their load, never traced nor crash-checked
        (harness/check/traced_run.py), then at most CROSS_OPS checked operations around it: under
        a time budget as many as the drawn histories left short of CROSS_EXAMPLES crossings, one
        per point first and then the rest, with --examples CROSS_FIXED. So every point is crossed
        in every run, under every model, not when the draws happen to, and bugs drawn histories
        find are never kept waiting behind them. A point the budget leaves no time for says so.
        Point i's batches are numbered -1 - i and -10001 - i (Hypothesis's seed), in lane i % lanes."""
        self.cross_left = crossing
        soft = self.budget.soft
        if not (last or self._share_begun()):
            return
        lanes = max(LANES, self.config.jobs)
        if soft is None:
            # (with --examples always CROSS_FIXED, so the histories do not depend on --jobs)
            for i, p in list(crossing):
                if self.budget.search_over():
                    return
                crossing.remove((i, p))
                self._cross_one(checker, i, p, -1 - i, CROSS_FIXED, lanes)
            return
        # under a time budget: first one history for each point no history crossed yet (those a
        # draw crossed wait for nothing), then the rest up to CROSS_EXAMPLES crossings each
        need = {p.label: CROSS_EXAMPLES - self.stats.capacity.get(p.label, 0) for _i, p in crossing}
        rest = [(i, p) for i, p in crossing if need[p.label] > 0]
        crossing[:] = [(i, p) for i, p in crossing if need[p.label] == CROSS_EXAMPLES]
        for i, p in list(crossing):
            if self.budget.search_over():
                return
            crossing.remove((i, p))
            self._cross_one(checker, i, p, -1 - i, 1, lanes)
        for i, p in rest:
            if self.budget.search_over():
                return
            n = CROSS_EXAMPLES - self.stats.capacity.get(p.label, 0)
            if n > 0:
                # (numbered apart from a first pass's batch, so Hypothesis draws other histories)
                self._cross_one(checker, i, p, -1 - i - 10_000, n, lanes)

    def _cross_one(self, checker: Checker, i: int, p, batch_no: int, n: int, lanes: int) -> None:
        """N histories crossing point P (the I-th), as batch BATCH_NO of lane I % LANES."""
        strategy = strategies.for_target(self.target, replace(self.config, max_ops=CROSS_OPS), checker.model,
                                         cross=p.drawn)
        t0, n0 = time.monotonic(), self.stats.histories
        checker.aimer.lane = i % lanes
        self.crossing_now = True
        try:
            self._batch(strategy, batch_no, i % lanes, n)
        finally:
            self.crossing_now = False
            self.stats.capacity_histories += self.stats.histories - n0
            self.stats.capacity_s += time.monotonic() - t0
        if self.stats.capacity.get(p.label):
            self.stats.capacity_why.pop(p.label, None)      # (a first pass's reason, crossed since)
        else:
            self.stats.capacity_why.setdefault(
                p.label, f"its {n} crossing histories never ran the point's new path inside a checked operation")

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
        return [(i, p) for i, p in enumerate(self.capacity)
                if not p.why and (i % lanes) % max(1, self.config.jobs) == self.share]

    def _cross_points(self, checker: Checker, crossing: list, last: bool) -> None:
        """In the last CROSS_SHARE of a time budget (or, LAST, after the last batch of an
        --examples run): histories that cross each point of CROSSING (taken off it), the probe's
        operations up to just before the point as their load, never crash-checked, then at most
        CROSS_OPS checked operations around it: under a time budget as many as the drawn
        histories left short of CROSS_EXAMPLES crossings, with --examples CROSS_FIXED. So every point is crossed in every run,
        under every model, not when the draws happen to, and bugs drawn histories find are never
        kept waiting behind them. A point the budget leaves no time for says so. Point i's batch
        is numbered -1 - i (Hypothesis's seed), in lane i % lanes."""
        soft = self.budget.soft
        if not (last or (soft is not None and soft - time.monotonic() < CROSS_SHARE * self.config.budget)):
            return
        lanes = max(LANES, self.config.jobs)
        for i, p in list(crossing):
            if self.budget.search_over():
                return
            crossing.remove((i, p))
            # (with --examples always CROSS_FIXED, so the histories do not depend on --jobs)
            n = CROSS_FIXED if soft is None else CROSS_EXAMPLES - self.stats.capacity.get(p.label, 0)
            if n <= 0:
                continue
            strategy = strategies.for_target(self.target, replace(self.config, max_ops=CROSS_OPS), checker.model,
                                             cross=p.drawn)
            t0, n0 = time.monotonic(), self.stats.histories
            checker.aimer.lane = i % lanes
            try:
                self._batch(strategy, -1 - i, i % lanes, n)
            finally:
                self.stats.capacity_histories += self.stats.histories - n0
                self.stats.capacity_s += time.monotonic() - t0
            if not self.stats.capacity.get(p.label):
                self.stats.capacity_why.setdefault(
                    p.label, f"its {n} crossing histories never ran the point's new path inside a checked operation")

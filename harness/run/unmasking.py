"""Unmasking while the search runs: after each batch, the bugs new to its lane are shrunk and their
fixes searched, and the lane's later histories are checked with them known (Checker.unmask,
harness/check/unmask.py): a failing crash state a known bug explains is that bug again, so the
lane's failures that remain, and the histories Hypothesis shrinks, are other bugs'.

A mixin of harness/run/search.py's Search. With --examples, what a lane knows comes from its own
batches only (its smallest example of each group it met first in a batch, shrunk on a copy; the fix
searched with the lane's earlier fixes applied), as `seen` does, so the same bugs come out with any
--jobs; with a time budget the share's lanes share what they learn (`_scope`). A
learned example that is still the registry's when the batches end is not shrunk again
(harness/run/after_batches.py `_take_learned`). Learning stops at the search's soft deadline:
its time is the search's, never the shrinking reserve's. Never draws a history.
"""
from __future__ import annotations

import time
from dataclasses import replace

from crashcheck.crashsim.runner_client import Stopped
from crashcheck.harness.check import threads
from crashcheck.harness.check.findings import Finding, HistoryOutcome
from crashcheck.harness.check.fix_search import about_ordering, describe
from crashcheck.harness.check.unmask import Known, others
from crashcheck.harness.core.budget import OutOfTime
from crashcheck.harness.core.errors import DriverFailure
from crashcheck.harness.triage.causes import lost_cause

# seconds one learned bug's fix search may take (the search's own cap is 60 s: a bug found while
# exploring is searched again after the batches, with every bug's fix applied, if this one fails)
LEARN_FIX_S = 20.0


class Unmasking:
    """What each lane of a Search knows, and the learning after each of its batches."""

    def _unmask_init(self) -> None:
        self.lane_known: dict[int, Known] = {}
        self.lane_groups: set = set()       # the groups the batch's lane had met before it
        self.batch_new: dict[tuple, tuple] = {}   # group new to the lane -> (size, outcome, finding)
        self.learned: dict[int, tuple] = {}   # id(example finding) -> (it, its shrunk copies)

    def _scope(self, lane: int) -> int:
        """Whose knowledge a batch of LANE uses and adds to: with --examples its lane's own (the
        same bugs with any --jobs); with a time budget, which no two runs spend alike, the whole
        share's (a lane's second batch comes only after LANES batches: in a 120-s run of WORT's
        five bugs, never)."""
        return lane if self.config.examples is not None else -1

    def _batch_starts(self, lane: int) -> None:
        """Before a batch of LANE: the checker judges with what its scope knows."""
        self.lane_groups = set(self.seen) if self._scope(lane) == lane else set(self.registry)
        # (batch_new keeps what the crossing histories between batches met: learnt after this one)
        known = self.lane_known.get(self._scope(lane))
        self.checker.unmask = known if known else None

    def _met(self, outcome: HistoryOutcome, f: Finding, size: tuple) -> None:
        """F (of OUTCOME, SIZE) was found in this batch: the batch's smallest example of each
        unexpected group its lane had not met is what the lane learns from."""
        if f.expected or f.group in self.lane_groups:
            return
        have = self.batch_new.get(f.group)
        if have is None or size < have[0]:
            self.batch_new[f.group] = (size, outcome, f)

    def _learn(self, lane: int) -> None:
        """After a batch of LANE: shrink each new group's example (on a copy), then search its fix
        with the lane's known fixes applied and the likely fixes of the batch's other new bugs
        (one history often shows two of them, each masking the other); the lane then knows each
        one's minimal lost stores and proven fix."""
        checker = self.checker
        checker.unmask = None
        known = self.lane_known.setdefault(self._scope(lane), Known())
        shrunk = []
        for _size, outcome, f in sorted(self.batch_new.values(), key=lambda v: v[0]):
            if (f.point is None or f.cls == "leak" or f.recovery_of is not None
                    or threads.is_threaded(outcome.ops) or self.budget.search_over()):
                continue
            out, g = replace(outcome), replace(f, removed_by=[], symptoms=list(f.symptoms))
            try:
                checker.finalize(out, g, fix=False)
            except (Stopped, OutOfTime, DriverFailure, ValueError):
                continue            # not learned: the lane explores as before for this group
            if lost_cause(out.trace, g):
                self.learned[id(f)] = (f, out, g)      # (F kept alive: its id stays its own)
                shrunk.append((out, g))
        likely = [checker.likely_fix(out, g) for out, g in shrunk]
        causes = known.lost + [frozenset(lost_cause(out.trace, g)) for out, g in shrunk]
        for n, (out, g) in enumerate(shrunk):
            if about_ordering(g) and not self.budget.search_over():
                hints = tuple(e for m, edits in enumerate(likely) if m != n for e in edits)
                # first a fix that makes every state pass (one that removes what looked like other
                # bugs too, a grown node's other lines, shows they are one); failing that, one with
                # the others' likely fixes applied; then one with the other bugs' failing states
                # left out (by their minimal lost stores; not those this one's own lost stores
                # contain, which would leave out its own)
                leave_out = others(causes, lost_cause(out.trace, g))
                tries = [(known.edits, None)] + [(known.edits + hints, None)] * bool(hints) \
                    + [(known.edits, leave_out)] * bool(leave_out)
                for also, without in tries:
                    soft = self.budget.soft
                    left = LEARN_FIX_S if soft is None else max(0.0, soft - time.monotonic())
                    try:
                        checker.search_with(out, g, also, min(LEARN_FIX_S, left), without)
                    except (Stopped, OutOfTime, DriverFailure, ValueError):
                        break
                    if g.fix is not None and g.fix.found:
                        break
            fix = g.fix if g.fix is not None and g.fix.found else None
            known.add(lost_cause(out.trace, g), describe(fix.edits) if fix else None, fix.edits if fix else ())
        self.batch_new = {}


__all__ = ["LEARN_FIX_S", "Unmasking"]

"""Known bugs unmasked while exploring: the crash states a bug already known explains are not
judged again, so that later histories show the bugs beneath it.

Owns `Known` (the bugs one lane of a search has shrunk so far: each its minimal lost stores by
source line and, when proven, its fix), `others` (the other bugs a fix search for one bug leaves
out) and `Explainer` (Known applied to one history's trace).
A failing crash state is explained by a known bug when
  - a known proven fix forbids it: applied in simulation to the history's trace as the fix search
    applies a candidate (harness/check/fix_edits.py trace_edit), one of the state's lost pieces is
    guaranteed durable at the same moment of the fixed trace (the fixed code cannot lose it there);
  - or it loses stores at every source line of a known bug's minimal lost-store set (that bug's
    cause is in the state, whether or not its fix is proven).
Such a state is the known bug again; what fails in the states left is another bug.

Most such states are never executed (`Explainer.kept`): a state is explained by a known proven fix
or by a known bug of one source line exactly when it loses one of the pending pieces that fix
makes durable or that line stored, so the Checker (harness/check/pipeline.py) explores, at each
crash point, only the states that keep all of those (crashcheck/crashsim/keeping.py), and counts
the rest as pruned. A bug whose minimal lost stores span several lines is explained only by losing
stores at each of them: not a product of choices, so its states are executed, and `explains` then
drops those that fail (asked only for a failing state: the states that pass cost nothing). With a
proven fix known, the fixed trace is simulated once per history, before its first crash point.
Only when the lane knows a bug (Checker.unmask is None otherwise). Never decides what is known
(harness/run/unmasking.py does).
"""
from __future__ import annotations

import bisect
import os
from dataclasses import dataclass, field

from crashcheck.crashsim.keeping import KeptPoint, keeping
from crashcheck.crashsim.persistency import ModelOptions
from crashcheck.crashsim.simulate import Simulator
from crashcheck.crashsim.trace import Trace
from crashcheck.harness.check.findings import site_key, store_site
from crashcheck.harness.check.fix_edits import trace_edit


@dataclass
class Known:
    """The bugs known to one lane: their minimal lost stores (file:line sets) and proven fixes
    (their words -> edits)."""
    lost: list[frozenset[str]] = field(default_factory=list)
    fixes: dict[str, tuple] = field(default_factory=dict)

    def add(self, lost: tuple[str, ...], fix_words: str | None = None, edits: tuple = ()) -> None:
        if lost and frozenset(lost) not in self.lost:
            self.lost.append(frozenset(lost))
        if fix_words is not None and edits:
            self.fixes.setdefault(fix_words, tuple(edits))

    @property
    def edits(self) -> tuple:
        """Every known fix's edits, in the order they were proven."""
        return tuple(e for edits in self.fixes.values() for e in edits)

    def __bool__(self) -> bool:
        return bool(self.lost or self.fixes)


def others(causes, mine) -> Known:
    """The bugs of CAUSES (minimal lost-store sets) whose failing states a fix search for the bug
    of MINE leaves out, where no fix of theirs is proven: each but those MINE contains (leaving
    out the states that lose one of those would leave out the bug's own)."""
    mine = set(mine)
    return Known([c for c in dict.fromkeys(frozenset(c) for c in causes) if c and not c <= mine])


class Explainer:
    """KNOWN applied to TRACE (one history): which of its failing states a known bug explains."""

    def __init__(self, known: Known, trace: Trace, options: ModelOptions) -> None:
        self.known, self.trace, self.options = known, trace, options
        self._fixed: tuple | None = None       # (where, point events, pending per point), once built
        self._sites: dict[int, str] = {}       # store event -> its source line (site_key)
        self._single = {next(iter(c)) for c in known.lost if len(c) == 1}   # one-line causes

    def counted_keep(self, outcome):
        """`kept` for explore's keep=, adding each point's left-out states to OUTCOME.pruned."""
        def keep(cp):
            kept = self.kept(cp)
            if kept is not None:
                outcome.pruned += kept.pruned
            return kept
        return keep

    def kept(self, point) -> KeptPoint | None:
        """POINT's states that keep every pending piece a known proven fix makes durable there or a
        known bug of one source line stored (the others are that bug again: module note), or None
        when there is no such piece."""
        pending = [p for u in point.units for p in u.pieces]
        must = {p.id for p in self._durable(point, pending)}
        if self._single:
            must.update(p.id for p in pending if self._site(p) in self._single)
        return keeping(point, must) if must else None

    def explains(self, point, choice) -> bool:
        """Whether a known bug explains the state CHOICE at crash point POINT (module note)."""
        lost = point.lost(choice)
        if not lost:
            return False
        lines = {self._site(p) for p in lost}
        if any(cause <= lines for cause in self.known.lost):
            return True
        return bool(self._durable(point, lost))

    def _site(self, piece) -> str:
        line = self._sites.get(piece.seq)
        if line is None:
            line = self._sites[piece.seq] = site_key(self.trace, store_site(self.trace, piece))
        return line

    def _durable(self, point, pieces) -> list:
        """Those of PIECES (pending at POINT) that the known fixes make durable by then: guaranteed
        at the same moment of the fixed trace (the fixed code cannot lose them there)."""
        if not self.known.fixes:
            return []
        if self._fixed is None:
            self._fixed = self._simulate_fixed()
        where, events, pending = self._fixed
        if where is None:
            return []
        # the fixed trace's crash point at the same moment: the first at or after this one's event
        at = bisect.bisect_left(events, where[min(point.event, len(where) - 1)])
        if at == len(events):
            return []
        crash, held = events[at], pending[at]
        return [p for p in pieces if where[p.seq] < crash and (p.seq, p.part) not in held]

    def _simulate_fixed(self) -> tuple:
        """The trace with every known fix applied, simulated: where each original event landed
        in it, its crash points' events (sorted) and, per point, its pending pieces named by the
        original event and part."""
        edit = trace_edit(self.trace, self.known.edits)
        if edit.empty:
            return None, [], []
        fixed = edit.apply(self.trace)
        where: list[int] = []
        back: dict[int, int] = {}
        n = 0
        for i in range(len(self.trace.events)):
            n += len(edit.before.get(i, ()))
            where.append(n)                     # a removed event: where the next one lands
            if i not in edit.remove:
                back[n] = i
                n += 1
            n += len(edit.after.get(i, ()))
        where.append(n)                         # the end of the trace
        events, pending = [], []
        for cp in _simulator(fixed, self.options).crash_points():
            events.append(cp.event)
            pending.append({(back.get(p.seq, -1), p.part) for u in cp.units for p in u.pieces})
        return where, events, pending


def _simulator(trace: Trace, options: ModelOptions) -> Simulator:
    """TRACE's simulator; over zeroed regions when their images are gone (a worker's work folder is
    removed once its share ends, and harness/run/fold_proofs.py fold_by_states explains the
    examples of every share when they are merged): nothing here reads an image."""
    return Simulator.from_trace(trace, options, read_images=all(os.path.isfile(r.image) for r in trace.regions))


__all__ = ["Explainer", "Known", "others"]

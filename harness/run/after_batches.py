"""After a search's batches: the crash state of every example kept shrunk (the newest first), its
fix searched with the fixes of the bugs found before it applied in simulation (unmasking; failing
that, with the failing states of the bugs no fix is proven for left out), the fixes
checked on the other examples' histories (harness/run/fix_checks.py) and proven to remove what they
fold (harness/run/fold_proofs.py).

A mixin of harness/run/search.py's Search (it uses the search's checker, registry, budget, journal
state and nondeterminism probe), apart so the search keeps one job. Never draws a history.
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable

from crashcheck.crashsim.runner_client import Stopped
from crashcheck.harness.check import determinism
from crashcheck.harness.check.unmask import others
from crashcheck.harness.core.budget import OutOfTime, signal_name
from crashcheck.harness.core.errors import DriverFailure
from crashcheck.harness.run.fix_checks import check_fixes
from crashcheck.harness.run.history_shrink import shrink_history, shrinkable
from crashcheck.harness.run.fold_proofs import prove_folds
from crashcheck.harness.run.results import Entry
from crashcheck.harness.triage.causes import fix_key, lost_cause

# How far a bug was shrunk (its history, its crash state): docs/bug-record.md `shrink`
SHRUNK, CUT, NOT_TRIED, NO_STATE = "done", "cut by the budget", "not tried", "no crash state"


class AfterBatches:
    """Shrinking and fixes of a Search's examples, once its batches have ended."""

    def _history_shrink(self, entry: Entry) -> str:
        """How far ENTRY's history was shrunk: by the batch its example came from, if that batch
        shrank its class (else, not tried: it came out small on its own, or beside another class)."""
        classes, how = self.batch_shrink.get(entry.rank[1] if len(entry.rank) > 1 else -1, (frozenset(), NOT_TRIED))
        return how if entry.finding.cls in classes and not entry.finding.expected else NOT_TRIED

    def _search_fixes(self, stop: Callable[[], bool]) -> None:
        """Search the fix of every shrunk example, the first found first: the bug found first is
        usually the one every history shows, and its fix, applied in simulation to the later
        searches, unmasks the others (Checker.fix_finding); an example a known fix removes is
        that bug's symptom and gets no fix of its own."""
        shrunk = [e for e in sorted(self.registry.values(), key=lambda e: e.found_at) if e.state_shrink == SHRUNK]
        checker = self.checker

        def unfixed() -> list[Entry]:
            return [e for e in shrunk if not e.finding.removed_by and e.finding.fix is not None
                    and not e.finding.fix.found and not e.finding.expected]
        try:
            for entry in shrunk:
                if stop() or self.budget.expired():
                    return
                # (a fix found while exploring, harness/run/unmasking.py, is not searched again)
                fix = entry.finding.fix
                checker.fix_finding(entry.outcome, entry.finding, found=fix if fix is not None and fix.found else None)
            # bugs that mask each other (a history that deletes shows the insert's bug too, and
            # the insert's shortest history may delete): each searched again with the likely
            # fixes of the others applied, in simulation
            for entry in unfixed():
                if stop() or self.budget.expired():
                    return
                hints = tuple(x for o in unfixed() if o is not entry
                              for x in checker.likely_fix(o.outcome, o.finding))
                if hints:
                    checker.fix_finding(entry.outcome, entry.finding, hints)
            # failing that, each with the failing states of the other bugs no fix is proven for
            # left out (by their minimal lost stores, harness/check/unmask.py): a state that
            # loses another bug's cause fails whatever this one's candidate fixes (and searched
            # again with the fixes this proves applied, for the bugs whose states it left out)
            proven = len(checker.known_fixes)
            for entry in unfixed():
                if stop() or self.budget.expired():
                    return
                causes = [lost_cause(o.outcome.trace, o.finding) for o in shrunk if o is not entry
                          and not (o.finding.expected or o.finding.removed_by or fix_key(o.finding))]
                leave_out = others(causes, lost_cause(entry.outcome.trace, entry.finding))
                if leave_out or len(checker.known_fixes) > proven:
                    checker.fix_finding(entry.outcome, entry.finding, known=leave_out or None)
        except (Stopped, OutOfTime, DriverFailure):
            return
        except KeyboardInterrupt as exc:
            self.interrupted = signal_name(exc)

    def _own_history_shrink(self, entry: Entry, left: int) -> None:
        """Shrink ENTRY's history, which its batch did not (harness/run/history_shrink.py), within
        its share of the time left: a quarter of the time left over LEFT bugs (the newest first;
        the rest is for its crash state, and for the fixes searched and proven after them all)."""
        if not shrinkable(entry.outcome, entry.finding) or self.config.shrink_calls <= 0:
            return              # (--shrink 0: no history is shrunk)
        hard = self.budget.hard
        until = None if hard is None else time.monotonic() + max(0.0, hard - time.monotonic()) / left / 4
        out, f, done = shrink_history(self.checker, entry.outcome, entry.finding, until)
        if f is not entry.finding:
            text = out.model.op_text if out.model is not None else str
            entry.outcome, entry.finding = out, f
            entry.size = (len(out.ops), sum(len(text(op)) for op in out.ops))
        entry.history_shrink = SHRUNK if done else CUT

    def _take_learned(self, entry: Entry) -> bool:
        """ENTRY's example was shrunk (and its fix searched) while exploring, by the lane that
        found it (harness/run/unmasking.py): take that, and shrink nothing again."""
        learned = getattr(self, "learned", {}).get(id(entry.finding))
        if learned is None or learned[0] is not entry.finding:
            return False
        entry.outcome, entry.finding = learned[1:]
        entry.state_shrink = SHRUNK
        return True

    def _keep_apart(self, entry: Entry) -> None:
        """The leaks ENTRY's shrunk finding showed beside it that its lost stores, persisted, do
        not remove (Finding.apart, harness/check/leak_apart.py): each an example of its own group,
        unless the registry has one (a leak shown alone too)."""
        for g in entry.finding.apart:
            if g.group not in self.registry:
                self.registry[g.group] = Entry(g.group, entry.size, entry.outcome, g, g.occurrences,
                                               entry.first_seen, entry.rank, entry.found_at)

    def _shrink_states(self) -> None:
        """Shrink the crash state of every example kept (the merge joins those that turn out to
        be the same bug once shrunk). With no time left (or after a signal or an error) bugs are
        reported as first seen. Shrinking traces each history again: a trace that differs from the
        first is a nondeterminism finding, and the bug stays as first seen."""
        # the newest first: an early bug's example is the one the batches shrank most, and a
        # late one, found beside it, is the one an unshrunk state would name after its stores
        entries = sorted(self.registry.values(), key=lambda e: e.found_at, reverse=True)
        for n, entry in enumerate(entries):
            entry.history_shrink = self._history_shrink(entry)
            if entry.history_shrink != SHRUNK and not (self.interrupted or self.error or self.budget.expired()):
                self._own_history_shrink(entry, len(entries) - n)
            has_state = entry.finding.point is not None and entry.finding.cls != "leak"
            # (a leak's crash state is kept as found: what leaked is what matters)
            entry.state_shrink = NOT_TRIED if entry.finding.point is not None else NO_STATE
            if self._take_learned(entry):
                self._keep_apart(entry)
                continue
            if self.interrupted or self.error or self.budget.expired():
                entry.unshrunk = has_state
                continue
            before, kept, ops = entry.outcome.trace, replace(entry.finding), entry.outcome.ops
            failed = None
            try:
                self.checker.finalize(entry.outcome, entry.finding, fix=False)
            except (Stopped, OutOfTime, DriverFailure, ValueError) as exc:
                failed = exc
            except KeyboardInterrupt as exc:
                self.interrupted = signal_name(exc)
                failed = exc
            # (a threaded bug's shrunk schedule is another run of other ops, its trace another)
            diff = (determinism.trace_difference(before, entry.outcome.trace, self.stored)
                    if before is not None and entry.outcome.trace is not before and entry.outcome.ops is ops
                    else None)
            if diff is not None:
                self.batch_no, self.call = entry.found_at
                self._nondeterministic(entry.outcome.ops, entry.outcome, before, diff)
            if failed is None and has_state:
                entry.state_shrink = SHRUNK
                self._keep_apart(entry)
            if failed is not None:
                if isinstance(failed, ValueError) and diff is None:
                    raise failed          # not the structure's doing: an internal error
                entry.unshrunk = True
                if has_state and diff is None and not isinstance(failed, DriverFailure):
                    entry.state_shrink = CUT      # out of time, or stopped, part way
                if diff is not None:      # report it as found, in the trace it was found in
                    entry.outcome.trace, entry.finding = before, kept
        stop = lambda: bool(self.interrupted or self.error)      # noqa: E731
        self._search_fixes(stop)
        check_fixes(self.checker, self.registry.values(), stop)
        # a fix proven for one bug, applied to the others' histories: what it removes may be
        # folded into its bug, what remains is a bug of its own (harness/run/fold_proofs.py)
        prove_folds(self.checker, self.registry.values(), stop)

"""The Checker's methods that work across bugs: a finding's fix searched with the run's other
proven fixes applied in simulation (unmasking: a bug already known masks no other), whether those
fixes together already remove a finding (then it is their symptom), and the proof of a fix found on
another history (harness/run/fold_proofs.py, fix_checks.py).

A mixin of harness/check/pipeline.py's Checker, apart so the facade stays one job: it uses the
Checker's session, settings, budget, trace(), oracle(), followup() and crash_free_findings(), and
keeps `known_fixes` (by their words, fix_words.describe -> edits). Never decides which findings
are one bug (harness/triage/bugs.py does, from what is set here: Finding.fix, Finding.removed_by).
"""
from __future__ import annotations

from crashcheck.harness.check import threads
from crashcheck.harness.check.findings import Finding, HistoryOutcome, site_key, store_site
from crashcheck.harness.check.fix_search import about_ordering, candidates, describe, prove, search_fix


class CheckerFixes:
    """Fixes across bugs, for the Checker (which sets known_fixes in its __init__)."""
    known_fixes: dict[str, tuple]

    def likely_fix(self, outcome: HistoryOutcome, f: Finding) -> tuple:
        """The edits the fix search would try first for F (fix_search.candidates), or ()."""
        if not about_ordering(f) or outcome.trace is None:
            return ()
        found = candidates(outcome.trace, f)
        return found[0].edits if found else ()

    def fix_finding(self, outcome: HistoryOutcome, f: Finding, hints: tuple = (), found=None,
                    known=None) -> None:
        """F's fix, for a finding finalize shrank without one, with the run's other bugs unmasked
        (known_fixes, applied in simulation). When the known fixes together make F's history
        pass, F is a symptom of their bugs and gets no fix of its own: F.removed_by names each
        known fix without which the history fails again, first those that edit a store F's state
        loses (harness/triage/bugs.py folds F into the first one's bug). Else the search applies
        every known fix with each candidate (harness/check/fix_search.py), and the fix found
        joins the known ones. HINTS: edits applied with every candidate too (the likely fixes of
        other bugs none of whose fixes is proven yet, when each masks the other). FOUND: F's fix
        already found while exploring (harness/run/unmasking.py): taken instead of a search, unless
        the known fixes remove F. KNOWN: other bugs with no proven fix, whose failing states (by
        their minimal lost stores, harness/check/unmask.py) the search leaves out."""
        if (not self.settings.fixes or self.budget.expired() or not about_ordering(f)
                or threads.is_threaded(outcome.ops) or outcome.trace is None):
            return
        trace = outcome.trace
        lines = self.trace(outcome.ops)[1]
        oracle = self.oracle(outcome.ops, trace, lines, outcome.followup)
        # (the proven fixes, not KNOWN: passing them as KNOWN left nothing out, or died in the
        # Explainer once a fix was proven)
        proven = list(self.known_fixes.items())
        every = tuple(e for _, edits in proven for e in edits)
        if proven and prove(self.session, trace, oracle, every):
            needed = [words for words, edits in proven
                      if prove(self.session, trace, oracle, tuple(e for e in every if e not in edits)) is False]
            lost = {site_key(trace, store_site(trace, p)) for p in f.lost}
            mine = [w for w, edits in proven if w in needed and any({e.anchor, e.other} & lost for e in edits)]
            f.removed_by.extend(w for w in mine + [w for w in needed if w not in mine] if w not in f.removed_by)
            if not f.removed_by:
                f.removed_by.append(proven[0][0])      # any one of them removes it
            f.fix = None
            return
        if found is not None:
            f.fix = found
        else:
            f.fix = search_fix(self.session, trace, oracle, f, also=every + tuple(e for e in hints if e not in every),
                               known=known)
        if f.fix is not None and f.fix.found:
            self.known_fixes.setdefault(describe(f.fix.edits), f.fix.edits)

    def search_with(self, outcome: HistoryOutcome, f: Finding, also: tuple, max_seconds: float,
                    known=None) -> None:
        """F's fix (F shrunk by finalize), searched with the fixes ALSO applied in simulation,
        the failing states of KNOWN bugs' minimal lost stores left out (harness/check/unmask.py
        Known), within MAX_SECONDS (a lane's known bugs, harness/run/unmasking.py); the run's
        known_fixes untouched."""
        if (not self.settings.fixes or not about_ordering(f) or threads.is_threaded(outcome.ops)
                or outcome.trace is None):
            return
        trace, lines = outcome.trace, self.trace(outcome.ops)[1]
        oracle = self.oracle(outcome.ops, trace, lines, outcome.followup)
        f.fix = search_fix(self.session, trace, oracle, f, max_seconds=max_seconds, also=also, known=known)

    def prove_fix(self, ops: list, edits: tuple, also: tuple = ()) -> bool | None:
        """Whether the fix EDITS (harness/check/fix_search.py, found on another history; with
        ALSO, other bugs' fixes) makes every crash state of history OPS pass; None when it cannot
        tell (the history does not fail without it either, is threaded, or the time ran out)."""
        if threads.is_threaded(ops) or self.budget.expired():
            return None
        trace, lines = self.trace(ops)
        if self.crash_free_findings(ops, lines, trace):
            return None
        return prove(self.session, trace, self.oracle(ops, trace, lines, self.followup(ops)), edits, also)

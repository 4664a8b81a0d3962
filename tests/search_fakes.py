"""A stand-in for the search's Checker (harness/check/pipeline.py), for tests of the search alone
(harness/run/search.py): the ordered map's model, an Aimer, a context manager; subclasses say
what `check` answers."""
from __future__ import annotations

from crashcheck.harness.check.aims import Aimer
from crashcheck.specs import registry


class FakeChecker:
    def __init__(self, *a, **k) -> None:
        self.model = registry.get("ordered_map")
        self.aimer = Aimer()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    known_fixes: dict = {}      # (no fix is ever proven here)

    def finalize(self, outcome, finding, fix: bool = True) -> None:
        pass

    def fix_finding(self, outcome, finding, hints: tuple = ()) -> None:
        pass

    def likely_fix(self, outcome, finding) -> tuple:
        return ()

    def prove_fix(self, ops, edits, also: tuple = ()) -> None:
        return None

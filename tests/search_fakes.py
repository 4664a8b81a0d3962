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

    def finalize(self, outcome, finding) -> None:
        pass

"""What the search's property says to Hypothesis, and how a batch of Hypothesis examples ended.

Owns the exceptions the property raises (`Found` and its one subclass per finding class,
`ShrinkSpent`, `Abort`), the one line that raises a Found (`raise_found`) and `batch_end`, which
sorts out what ended a batch. Never checks a history and never keeps a finding: the registry of
findings is harness/run/search.py's, and every finding is in it before anything here is raised.
"""
from __future__ import annotations

from hypothesis.errors import Flaky

from crashcheck.harness.core.errors import UsageError
from crashcheck.specs.oracle import CLASSES, CONCURRENT_CLASSES

# Which unexpected class a batch shrinks first when a history shows several.
CLASS_ORDER = {c: i for i, c in enumerate(CLASSES + CONCURRENT_CLASSES)}


class Found(Exception):
    """Raised inside the Hypothesis property for an unexpected finding; one subclass per class so
    Hypothesis shrinks each class separately."""


FOUND = {cls: type(f"Found_{cls.replace('-', '_')}", (Found,), {}) for cls in CLASSES + CONCURRENT_CLASSES}


class ShrinkSpent(BaseException):
    """Ends a batch once its shrink budget (Config.shrink_calls) is spent. Every finding is in the
    registry already, so nothing Hypothesis would still do is needed; and with its clock held
    (held_engine_clock) nothing else would stop its shrinker, which on a long history (a bulk load
    past a capacity threshold, several threads) spends minutes drawing candidates it never checks."""


class Abort(BaseException):
    """Carries a UsageError/SetupError out of Hypothesis, which would otherwise take it for a
    failure of the property and spend time shrinking it."""

    def __init__(self, error: UsageError) -> None:
        super().__init__(str(error))
        self.error = error


def raise_found(raised: type, detail: str) -> None:
    """Raise RAISED(DETAIL), from this one line whether it is a history's first check or a replay
    (Hypothesis tells failures apart by exception type and the line raising it)."""
    raise raised(detail)


def batch_end(exc: BaseException) -> str | None:
    """Sort out what ended a batch: None for (a group of) our Found exceptions; a warning for one
    of Hypothesis's Flaky errors (Flaky, FlakyFailure, FlakyStrategyDefinition, ...), which the
    property's answering every history as it did the first time leaves for real surprises (the
    structure's own nondeterminism is a finding, made by the property); anything else, including
    a Flaky around another exception, is raised again (an internal error). Either way what was
    found stays in the registry."""
    if not _ours(exc):
        raise exc
    flaky = _flaky_in(exc)
    if flaky is None:
        return None
    first = (str(flaky).strip().splitlines() or [""])[0]
    return (f"Hypothesis found a history that did not behave the same when run again "
            f"({type(flaky).__name__}: {first[:200]}); what was found is kept")


def _ours(exc: BaseException) -> bool:
    group = getattr(exc, "exceptions", None)
    if group:
        return all(_ours(e) for e in group)
    return isinstance(exc, (Found, Flaky))


def _flaky_in(exc: BaseException) -> BaseException | None:
    if isinstance(exc, Flaky):
        return exc
    return next((f for f in map(_flaky_in, getattr(exc, "exceptions", None) or ()) if f is not None), None)


__all__ = ["Abort", "CLASS_ORDER", "FOUND", "Found", "ShrinkSpent", "batch_end", "raise_found"]

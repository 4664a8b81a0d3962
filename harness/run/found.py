"""What the search's property says to Hypothesis, and how a batch of Hypothesis examples ended.

Owns the exceptions the property raises (`Found` and its one subclass per finding class,
`ShrinkSpent`, `Abort`, `Internal`; `not_a_failure` picks between the last two for an error of
crashcheck's own), the one line that raises a Found (`raise_found`) and `batch_end`, which sorts
out what ended a batch (a group of several failures leaf by leaf). Never checks a history and never keeps a finding: the registry of
findings is harness/run/search.py's, and every finding is in it before anything here is raised.
"""
from __future__ import annotations

import errno
import sys
import traceback
from dataclasses import dataclass, field

from hypothesis.errors import DeadlineExceeded, FailedHealthCheck, Flaky, Unsatisfiable

from crashcheck.crashsim.runner_client import Stopped
from crashcheck.harness.core import workdir as workdirs
from crashcheck.harness.core.budget import OutOfTime
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


class Internal(BaseException):
    """Carries an internal error (crashcheck's own, TEXT its traceback) out of Hypothesis, which
    would otherwise take it for a failure of the property and shrink it: every try a full check of
    a history (a run once spent minutes so before its OverflowError ended it)."""

    def __init__(self, text: str) -> None:
        super().__init__(text.strip().splitlines()[-1] if text.strip() else "internal error")
        self.text = text


def not_a_failure(checker) -> BaseException:
    """What the property raises for the exception being handled, which is no failure of the
    structure: a runner Stopped by the budget or a stop is the budget running out (OutOfTime); a
    full work folder (ENOSPC, EDQUOT, wherever in crashcheck's code it struck) is the machine's
    fault, one line (an Abort); anything else an Internal with its traceback."""
    exc = sys.exc_info()[1]
    if isinstance(exc, Stopped):
        return OutOfTime()
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        session = getattr(checker, "session", None)
        return Abort(workdirs.full_error(getattr(session, "workdir", None) or workdirs.scratch_root()))
    return Internal(traceback.format_exc())


def raise_found(raised: type, detail: str) -> None:
    """Raise RAISED(DETAIL), from this one line whether it is a history's first check or a replay
    (Hypothesis tells failures apart by exception type and the line raising it)."""
    raise raised(detail)


# What Hypothesis itself may end a batch with (the rest of its errors, InvalidArgument say, are
# ours to fix: internal errors).
HYPOTHESIS_ENDS = (Flaky, Unsatisfiable, DeadlineExceeded, FailedHealthCheck)
STOPS = (OutOfTime, ShrinkSpent, KeyboardInterrupt)


@dataclass
class BatchEnd:
    """How a batch ended, once batch_end has sorted out what Hypothesis raised."""
    out_of_time: bool = False        # the budget ran out inside it (the search ends)
    shrink_spent: bool = False       # its shrink budget was spent
    warnings: list[str] = field(default_factory=list)   # Hypothesis's own complaints, one line each


def batch_end(exc: BaseException) -> BatchEnd:
    """Sort out what ended a batch. Hypothesis may raise what the property raised alone, or, when
    several failures were replayed at its end, a group of them (a BaseExceptionGroup, and a
    FlakyFailure is one too), in which our own OutOfTime, ShrinkSpent or a signal can sit beside
    the Found exceptions: Hypothesis's final replay catches everything. Every leaf counts:
    - a signal (KeyboardInterrupt), an Abort or an Internal is raised again: it ends the run as it
      would alone;
    - anything else not ours nor Hypothesis's is an internal error: raised again, the leaf itself
      (with its own traceback), so the search keeps what was found and records it;
    - OutOfTime: the budget ran out (a replay or a probe that ran out of time is no failure);
    - Flaky (FlakyFailure, FlakyStrategyDefinition, ...), Unsatisfiable, DeadlineExceeded and any
      other error of Hypothesis's own: a warning of the target, the batch's findings kept (the
      property answers a history run again as it did the first time, so these are real surprises;
      the structure's own nondeterminism is a finding, made by the property);
    - Found and ShrinkSpent: the batch did what it should.
    Either way what was found stays in the registry."""
    end = BatchEnd()
    leaves: list[BaseException] = []
    _leaves(exc, leaves, end)
    for kind in (KeyboardInterrupt, Abort, Internal):
        first = next((e for e in leaves if isinstance(e, kind)), None)
        if first is not None:
            raise first
    internal = next((e for e in leaves if not isinstance(e, (Found, *STOPS, *HYPOTHESIS_ENDS))), None)
    if internal is not None:
        raise internal
    end.out_of_time = any(isinstance(e, OutOfTime) for e in leaves)
    end.shrink_spent = any(isinstance(e, ShrinkSpent) for e in leaves)
    for e in leaves:
        if isinstance(e, HYPOTHESIS_ENDS):
            _warn(end, e)
    return end


def _leaves(exc: BaseException, into: list[BaseException], end: BatchEnd) -> None:
    """Every exception inside EXC (groups opened, a Flaky group noted as a warning on the way)."""
    group = getattr(exc, "exceptions", None)
    if isinstance(exc, BaseExceptionGroup) and group:
        inside: list[BaseException] = []
        for e in group:
            _leaves(e, inside, end)
        # (a replay cut by the budget or a signal made it "flaky": no surprise of the structure's)
        if isinstance(exc, Flaky) and not all(isinstance(e, STOPS) for e in inside):
            _warn(end, exc)
        into.extend(inside)
        return
    cause = exc.__cause__
    if isinstance(exc, Exception) and isinstance(cause, BaseException) and not isinstance(cause, Exception) \
            and type(exc).__name__ == "_WrappedBaseException":
        # (a FlakyFailure holds Exceptions only: Hypothesis wraps our OutOfTime or a signal in
        # one of its private class, the original as its cause)
        into.append(cause)
        return
    into.append(exc)


def _warn(end: BatchEnd, exc: BaseException) -> None:
    first = (str(exc).strip().splitlines() or [""])[0][:200]
    if isinstance(exc, Flaky):
        text = (f"Hypothesis found a history that did not behave the same when run again "
                f"({type(exc).__name__}: {first}); what was found is kept")
    else:
        text = f"Hypothesis ended the batch ({type(exc).__name__}: {first}); what was found is kept"
    if text not in end.warnings:
        end.warnings.append(text)


__all__ = ["Abort", "BatchEnd", "Internal", "not_a_failure", "CLASS_ORDER", "FOUND", "Found", "ShrinkSpent", "batch_end", "raise_found"]

"""Whether `--strategy exhaustive` can take a trace on, decided before any state of it is checked.

Owns the bound (harness/core/defaults.py EXHAUSTIVE_MAX) and the one-line refusal. Exhaustive
checks every legal state of a crash point one by one, and one 328-byte pmem_memset_persist leaves
2^41 of them at its fence: a run that starts on it prints nothing for hours at full CPU, while
counting them (`crashcheck states`) takes seconds. A user who asked for exhaustive is told so at
once, with what to use instead; lazy covers every legal state too, by classes recovery cannot
tell apart. Never checks a state and never chooses another strategy itself: the caller decides
whether to refuse (`crashcheck run`, `crashcheck fuzz`) or to fall back.
"""
from __future__ import annotations

from crashcheck.crashsim.persistency import ModelOptions
from crashcheck.crashsim.simulate import CrashPoint, Simulator
from crashcheck.crashsim.trace import Trace
from crashcheck.harness.core import defaults
from crashcheck.harness.core.counts import big
from crashcheck.harness.core.errors import UsageError


def too_big(trace: Trace, options: ModelOptions, bound: int = defaults.EXHAUSTIVE_MAX,
            skip_before: int = 0) -> CrashPoint | None:
    """The first crash point of TRACE (from event SKIP_BEFORE, as the exploration starts) with more
    than BOUND legal states, or None (one pass of the simulator: what `crashcheck states` does)."""
    points = Simulator.from_trace(trace, options).crash_points(skip_before=skip_before)
    return next((cp for cp in points if cp.legal > bound), None)


def refusal(cp: CrashPoint, what: str, bound: int = defaults.EXHAUSTIVE_MAX) -> str:
    """The one line that refuses exhaustive for crash point CP of WHAT (a program, a history)."""
    return (f"--strategy exhaustive: {what} has a crash point with {big(cp.legal)} legal states (trace "
            f"event #{cp.event}), more than the {big(bound)} exhaustive checks one by one; use --strategy "
            "lazy (every legal state, covered by classes recovery cannot tell apart) or bounded (a sample)")


def refuse_exhaustive(trace: Trace, options: ModelOptions, what: str, skip_before: int = 0) -> None:
    """UsageError (one line, exit 2) if exhaustive cannot take TRACE on."""
    cp = too_big(trace, options, skip_before=skip_before)
    if cp is not None:
        raise UsageError(refusal(cp, what))


__all__ = ["refusal", "refuse_exhaustive", "too_big"]

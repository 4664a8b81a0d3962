"""Time budgets and stop requests: one object that every long loop of a run asks "may I go on?".

Owns the wall-clock budget of a fuzz run and the ways a run is told to stop early (Ctrl-C or
SIGTERM in the parent, the parent dying under a worker). Every loop that can run long polls it:
the fuzz loop between histories, Hypothesis's shrinking between tries, crash-state exploration
between states, the runner client while it waits for answers, the traced driver while it runs.
So `--budget` bounds the whole run, shrinking included, whatever the strategy.

A budget has two deadlines. `soft` ends the search for new histories and Hypothesis's shrinking;
`hard` ends everything, including shrinking the crash states of the bugs found (what is not done
by then is reported unshrunk). The gap between them is the reserve for that last step.
"""
from __future__ import annotations

import math
import os
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

# Share of the budget reserved for shrinking crash states after the search, and for writing the
# results and the report after that.
RESERVE_SHARE = 0.2
RESERVE_MAX_S = 45.0
WRITE_SHARE = 0.03
WRITE_MAX_S = 2.0

# When this process started crashcheck (close enough: crashcheck.harness.cli.main imports this module first), so
# a run's budget also covers its start-up.
PROCESS_START = time.monotonic()


class OutOfTime(BaseException):
    """Raised inside a long step when the budget is spent or a stop was requested. A
    BaseException, so that Hypothesis (which catches Exception as a test failure) and the
    structure-facing code let it through to the fuzz loop, which keeps what was found."""


class RunInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM reached the run; `signum` says which (the exit status is 128 + it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


# The signal that interrupted this process, kept beside the exception: Python swallows an
# exception raised by a signal handler that ran inside a garbage-collector callback or a __del__
# ("Exception ignored in ..."), and a run must still stop, with 128 + signal, at its next check.
_pending_signal: int | None = None


def interrupt(signum: int, frame=None) -> None:
    """Signal handler for SIGINT/SIGTERM: remember the signal, then raise RunInterrupted."""
    global _pending_signal
    _pending_signal = signum
    raise RunInterrupted(signum)


def pending_signal() -> int | None:
    """The signal interrupt() saw (even if its exception was swallowed), or None."""
    return _pending_signal


def clear_pending_signal() -> None:
    global _pending_signal
    _pending_signal = None


def note(signum: int, frame=None) -> None:
    """Signal handler that only remembers SIGNUM (pending_signal): for steps that must not be cut
    in the middle (starting or closing a Dask cluster), after which the run stops as interrupted."""
    global _pending_signal
    _pending_signal = signum


@contextmanager
def deferred_signals():
    """SIGINT and SIGTERM only noted (note) inside; the handlers before restored after. In the
    main thread only (elsewhere signals are not ours to handle)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {sig: signal.signal(sig, note) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def quiet_interrupts(hook):
    """A sys.unraisablehook that passes everything on to HOOK but the RunInterrupted that
    interrupt() raised where Python could only swallow it (a gc callback, such as Hypothesis's,
    or a __del__): the signal is kept (pending_signal) and stops the run at its next check, so
    the traceback Python would print is noise, not news."""
    def unraisable(info) -> None:
        if isinstance(info.exc_value, RunInterrupted) and _pending_signal is not None:
            return
        hook(info)
    return unraisable


def signal_name(exc: BaseException) -> str:
    """The name of the signal EXC (a RunInterrupted, else a plain KeyboardInterrupt) stands for."""
    return signal.Signals(exc.signum).name if isinstance(exc, RunInterrupted) else "SIGINT"


def swallowed_signal() -> str | None:
    """The signal whose exception Python swallowed (raised inside a gc callback), or None: the
    loops saw it as a stop, and the run must still say it was interrupted."""
    sig = _pending_signal
    return signal.Signals(sig).name if sig is not None else None


@dataclass
class Budget:
    """A run's deadlines (time.monotonic() seconds) and its stop flag.

    seconds      the budget, None for no time limit (a run bounded by --examples)
    stop_event   a multiprocessing.Event shared with the parent (workers), or None
    """
    seconds: float | None = None
    stop_event: object | None = None
    start: float = field(default_factory=time.monotonic)
    parent_pid: int | None = None

    def __post_init__(self) -> None:
        if self.seconds is not None and not (math.isfinite(self.seconds) and self.seconds > 0):
            raise ValueError(f"budget must be a positive number of seconds, not {self.seconds!r}")
        self._stopped = False

    @property
    def hard(self) -> float | None:
        if self.seconds is None:
            return None
        return self.start + self.seconds - min(WRITE_SHARE * self.seconds, WRITE_MAX_S)

    @property
    def soft(self) -> float | None:
        if self.seconds is None:
            return None
        return self.hard - min(RESERVE_SHARE * self.seconds, RESERVE_MAX_S)

    def stop(self) -> None:
        """Ask every loop polling this budget to end (and the workers sharing its event)."""
        self._stopped = True
        if self.stop_event is not None:
            self.stop_event.set()

    def stopped(self) -> bool:
        """A stop was requested: by stop(), through the shared event, or by the parent dying."""
        if self._stopped or _pending_signal is not None:
            return True
        if self.stop_event is not None and self.stop_event.is_set():
            self._stopped = True
        elif self.parent_pid is not None and os.getppid() != self.parent_pid:
            self._stopped = True      # the parent died: nobody will read our results
        return self._stopped

    def search_over(self) -> bool:
        """No new histories and no more Hypothesis shrinking (soft deadline or stop)."""
        return self.stopped() or (self.soft is not None and time.monotonic() >= self.soft)

    def expired(self) -> bool:
        """Nothing more at all (hard deadline or stop)."""
        return self.stopped() or (self.hard is not None and time.monotonic() >= self.hard)

    def left(self, cap: float | None = None) -> float | None:
        """Seconds until the hard deadline (at least 0), at most CAP; None if unbounded."""
        if self.hard is None:
            return cap
        left = max(0.0, self.hard - time.monotonic())
        return left if cap is None else min(cap, left)

    def check(self) -> None:
        """Raise OutOfTime if the run must end now (RunInterrupted after a signal)."""
        if _pending_signal is not None:
            raise RunInterrupted(_pending_signal)
        if self.expired():
            raise OutOfTime()


"""A signal whose exception Python swallowed (raised inside a gc callback or __del__) still stops
the run and still names the signal (harness/core/budget.py interrupt / pending_signal)."""

import gc
import signal

import pytest

from crashcheck.harness.core import budget
from crashcheck.harness.core.budget import Budget, RunInterrupted


@pytest.fixture(autouse=True)
def _clean():
    budget.clear_pending_signal()
    yield
    budget.clear_pending_signal()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_signal_raised_inside_a_gc_callback_is_swallowed_but_kept():
    fired = []

    def callback(phase, info):
        if phase == "start" and not fired:
            fired.append(1)
            budget.interrupt(signal.SIGTERM)      # as the handler would, mid-collection

    b = Budget(seconds=None)
    assert not b.stopped()
    gc.callbacks.append(callback)
    try:
        gc.collect()                              # Python prints "Exception ignored in ..." and goes on
    finally:
        gc.callbacks.remove(callback)
    assert fired
    assert budget.pending_signal() == signal.SIGTERM
    assert b.stopped() and b.expired() and b.search_over()
    with pytest.raises(RunInterrupted) as exc:
        b.check()
    assert exc.value.signum == signal.SIGTERM


def test_no_signal_no_stop():
    b = Budget(seconds=None)
    assert budget.pending_signal() is None
    assert not b.stopped() and not b.expired()
    b.check()


def test_a_swallowed_interrupt_prints_no_traceback(capfd):
    # SIGTERM landing in Hypothesis's gc callback: Python could only swallow the exception, and
    # printed it with a traceback through the unraisable hook. The run still stops (above); what
    # it prints is its own one line, so the hook a run installs drops this one and nothing else.
    import sys

    def callback(phase, info):
        if phase == "start" and not fired:
            fired.append(1)
            budget.interrupt(signal.SIGTERM)

    fired: list = []
    old, sys.unraisablehook = sys.unraisablehook, budget.quiet_interrupts(sys.__unraisablehook__)
    gc.callbacks.append(callback)
    try:
        gc.collect()
    finally:
        gc.callbacks.remove(callback)
        sys.unraisablehook = old
    assert fired and budget.pending_signal() == signal.SIGTERM
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception ignored" not in err and "RunInterrupted" not in err, err


def test_other_unraisable_exceptions_still_reach_the_hook():
    seen = []
    hook = budget.quiet_interrupts(seen.append)

    class Info:
        exc_value = ValueError("a real problem")
    hook(Info())
    budget._pending_signal = signal.SIGTERM
    hook(Info())
    assert len(seen) == 2

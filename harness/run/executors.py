"""Executors: where the units of a fuzz campaign run (harness/run/batch.py), behind one interface.

Owns `InProcess` (units one after the other in this process: `--jobs 1`, the default),
`LocalProcesses` (worker processes of our own on this machine: `--jobs N`) and what the executors
share (GIVE_UP_S, throttled); the Dask one is harness/run/dask_executor.py, and which one a
command line asks for is harness/run/executor_choice.py's. An executor only runs units
(harness/run/batch.py fuzz_batch, in whatever process) and hands back what they returned;
planning the units is harness/run/plan.py's and merging their results harness/run/merge.py's,
once, whichever executor ran them.

The interface:
  slots                  how many units run at once
  shares(config)         into how many units one target is cut
  journal(journal)       the journal the units write to (None: the client journals their results)
  build(build_id, s, b)  the build id units of target (s, b) must match ("": no check)
  run(units, on_progress) -> (results, lost units, signal name or None, error or None)
                         (unit, TargetResult) of every unit run; units that gave none (they failed,
                         their worker died, or they were cancelled after a stop); the signal that
                         stopped the run; what went wrong when a unit raised, its worker died for
                         good or the executor heard nothing for too long (one line, or a traceback):
                         the other units are told to stop, and what they found still comes back.
                         A unit that raised a CrashcheckError (a set-up fault: UsageError, a build
                         mismatch) re-raises it here instead. On SIGINT/SIGTERM every unit is told
                         to stop and what they found so far still comes back.
  close()

Local workers are processes of our own (not multiprocessing.Pool): they ignore SIGINT and stop
when the parent sets the shared stop event, so Ctrl-C ends every worker cleanly and their partial
results still come back.
"""
from __future__ import annotations

import multiprocessing
import os
import queue
import time
import traceback
from multiprocessing.connection import wait as wait_ready

from crashcheck.harness.run.batch import Share, fuzz_batch, ignore_sigint, stamp
from crashcheck.harness.core.budget import RunInterrupted, pending_signal, signal_name, swallowed_signal
from crashcheck.harness.core.errors import UsageError

# After a stop: how long to wait for units to hand back what they found (they stop within
# about a second; a unit shrinking a crash state may take a few). $CRASHCHECK_GIVE_UP_S changes it
# (the tests of units that never stop lower it).
GIVE_UP_S = 20.0
PROGRESS_EVERY_S = 1.0        # a worker sends its progress at most this often


def give_up_s() -> float:
    """GIVE_UP_S, or $CRASHCHECK_GIVE_UP_S (a positive number of seconds)."""
    text = os.environ.get("CRASHCHECK_GIVE_UP_S")
    if not text:
        return GIVE_UP_S
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 and value != float("inf")):
        raise UsageError(f"CRASHCHECK_GIVE_UP_S={text}: give a positive number of seconds")
    return value


def throttled(send, every: float = PROGRESS_EVERY_S):
    """A progress callback that passes on at most one report per EVERY seconds."""
    last = [0.0]

    def progress(p: dict) -> None:
        now = time.monotonic()
        if now - last[0] >= every:
            last[0] = now
            send(p)
    return progress


def _worker_main(conn, unit: Share, index: int, stop_event, progress_q, parent: int) -> None:
    """A local worker process: run UNIT and send its TargetResult (or the error that ended it).
    SIGTERM sent to the worker alone also ends it cleanly."""
    import signal
    ignore_sigint()
    termed = []

    def term(*_) -> None:
        termed.append(1)
        stop_event.set()
    signal.signal(signal.SIGTERM, term)
    progress_q.cancel_join_thread()          # never block this process's exit on the queue
    try:
        out = fuzz_batch(unit, stop_event, throttled(lambda p: progress_q.put((index, p))), parent)
        if termed:          # every unit stopped early: the run must not pass for a whole one
            out.interrupted = out.interrupted or "SIGTERM"
    except UsageError as exc:
        out = exc
    except BaseException:      # noqa: BLE001 - reported to the parent
        out = RuntimeError(f"worker {unit.share} of {unit.structure}: {traceback.format_exc()}")
    try:
        conn.send(out)
    finally:
        conn.close()


class InProcess:
    """Units one after the other in this process, as given. The run ends with the first unit a
    signal or an internal error ended: the units after it do not run (the merge leaves their
    targets out of the results, having no word of them and no error of the executor's)."""

    slots = 1

    def shares(self, config) -> int:
        return 1

    def journal(self, journal):
        return journal

    def build(self, build_id, structure: str, bug: str | None) -> str:
        return ""                # the same files: nothing to compare

    def close(self) -> None:
        pass

    def run(self, units: list[Share], on_progress=None):
        results = []
        for index, unit in enumerate(units):
            report = None if on_progress is None else (lambda p, i=index: on_progress(i, p))
            out = fuzz_batch(stamp(unit), progress=report)
            results.append((unit, out))
            if out.interrupted or out.error:
                break
        return results, [], None, None


class LocalProcesses:
    """Units in at most JOBS forked worker processes at a time (one per unit)."""

    def __init__(self, jobs: int) -> None:
        self.jobs = max(1, jobs)
        self.slots = min(self.jobs, os.cpu_count() or 1)

    def shares(self, config) -> int:
        return self.jobs

    def journal(self, journal):
        return journal           # workers append to the client's journal themselves

    def build(self, build_id, structure: str, bug: str | None) -> str:
        return ""                # the same files as the client: nothing to compare

    def close(self) -> None:
        pass

    def run(self, units: list[Share], on_progress=None):
        patience = give_up_s()
        ctx = multiprocessing.get_context("fork")
        stop = ctx.Event()
        progress_q = ctx.Queue()
        pending = list(enumerate(units))
        running: dict = {}       # connection -> (process, index, unit)
        results, lost = [], []
        interrupted: str | None = None
        failure: BaseException | None = None     # a unit's UsageError: raised again at the end
        error: str | None = None
        parent = os.getpid()
        give_up = None           # after a stop: when to stop waiting for workers
        while pending or running:
            try:
                while pending and len(running) < self.slots and interrupted is None and failure is None \
                        and error is None:
                    index, unit = pending.pop(0)
                    recv, send = ctx.Pipe(duplex=False)
                    proc = ctx.Process(target=_worker_main, daemon=True,
                                       args=(send, stamp(unit), index, stop, progress_q, parent))
                    proc.start()
                    send.close()
                    running[recv] = (proc, index, unit)
                if not running:
                    break
                ready = wait_ready(list(running), timeout=0.5)
                for conn in ready:
                    proc, index, unit = running.pop(conn)
                    try:
                        got = conn.recv()
                    except (EOFError, OSError):
                        got = None
                    conn.close()
                    proc.join(5)
                    if got is None or isinstance(got, BaseException):
                        lost.append(unit)
                        if isinstance(got, UsageError):
                            failure = failure or got
                        elif interrupted is None or got is not None:
                            error = error or (str(got) if got is not None else
                                              f"the worker process of unit {unit.share} of {unit.structure} "
                                              f"died (exit status {proc.exitcode}) without handing back "
                                              "what it found")
                        stop.set()
                        pending.clear()
                        give_up = give_up or time.monotonic() + patience
                    else:
                        results.append((unit, got))
                _drain(progress_q, on_progress)
                if interrupted is None and swallowed_signal():
                    raise RunInterrupted(pending_signal())
                if give_up is not None and time.monotonic() > give_up:
                    for conn, (proc, index, unit) in list(running.items()):
                        proc.kill()
                        proc.join(5)
                        lost.append(unit)
                        running.pop(conn)
            except KeyboardInterrupt as exc:
                interrupted = interrupted or signal_name(exc)
                stop.set()
                pending.clear()
                give_up = time.monotonic() + patience
        progress_q.close()
        if failure is not None:
            raise failure
        return results, lost, interrupted, error


def _drain(q, on_progress) -> None:
    while True:
        try:
            index, p = q.get_nowait()
        except (queue.Empty, OSError, EOFError, ValueError):
            return
        if on_progress is not None:
            on_progress(index, p)


__all__ = ["GIVE_UP_S", "InProcess", "LocalProcesses", "give_up_s", "throttled"]

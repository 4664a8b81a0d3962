"""Executors: where the units of a fuzz campaign run (harness/run/batch.py), behind one interface.

Owns `LocalProcesses` (worker processes of our own on this machine: `--jobs N`, the default)
and choosing an executor from the command line (`--dask ADDRESS`: harness/run/dask_executor.py, only
imported then, so Dask stays an optional dependency). An executor only runs units and hands back
what they returned; planning the units and merging their results is harness/run/fuzz.py's, once.

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
import re
import time
import traceback
from multiprocessing.connection import wait as wait_ready

from harness.run.batch import Unit, fuzz_batch, ignore_sigint, stamp
from harness.core.budget import RunInterrupted, pending_signal, signal_name, swallowed_signal
from harness.core.errors import UsageError

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


def _worker_main(conn, unit: Unit, index: int, stop_event, progress_q, parent: int) -> None:
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

    def run(self, units: list[Unit], on_progress=None):
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


LOCAL_DASK = re.compile(r"local:(\d+)$")
DASK_ADDRESS = re.compile(r"(tcp|tls|ucx|inproc)://[^\s/]+:\d+$")


def check_dask(dask: str | None) -> None:
    """Refuse a --dask value that is neither local:N nor a scheduler address, or a machine
    without Dask (one line each), before the run writes anything."""
    if dask is None:
        return
    m = LOCAL_DASK.match(dask)
    if dask.startswith("local") and (m is None or not 1 <= int(m.group(1)) <= 64):
        raise UsageError(f"--dask {dask}: give local:N with N from 1 to 64 worker processes, or a "
                         "scheduler's address such as tcp://HOST:8786")
    if m is None and not DASK_ADDRESS.match(dask):
        raise UsageError(f"--dask {dask}: not a scheduler address; give tcp://HOST:PORT "
                         "(`dask scheduler` prints it) or local:N")
    try:
        import distributed  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"--dask needs Dask distributed, which is not installed ({exc.name or exc}); "
                         "pip install 'crashcheck[dask]'") from None


def from_args(jobs: int, dask: str | None):
    """The executor `--jobs` / `--dask` ask for (None: run in this process, --jobs 1)."""
    if dask is None:
        return LocalProcesses(jobs) if jobs > 1 else None
    check_dask(dask)
    from harness.run.dask_executor import DaskExecutor
    m = LOCAL_DASK.match(dask)
    return DaskExecutor(local=int(m.group(1)) if m else None, address=None if m else dask)


__all__ = ["LocalProcesses", "check_dask", "from_args", "throttled"]

"""The Dask executor: a campaign's units as futures on a Dask distributed cluster.

Owns connecting to a scheduler (`--dask tcp://HOST:8786`) or starting a LocalCluster of worker
processes (`--dask local:N`), and running units there with the interface of
harness/run/executors.py. Imported only when --dask is given: Dask is optional (crashcheck[dask]).

How the pieces travel:
  - everything of ours crosses the cluster as harness/run/wire.py bytes (pickled): the units, the
    TargetResults they return, and what they log on the run's topic; Dask's own messages are
    msgpack, whose integers end at 2^64, and legal-state counts pass that;
  - a unit goes out as a future (harness/run/batch.py fuzz_batch on the worker); its TargetResult
    comes back; traces, pools and images stay in the worker's $CRASHCHECK_WORKDIR;
  - the journal: each unit sends its journal lines (a bug the moment it is found, its stats at its
    end) on the same topic, and the client appends them to the run's journal (TopicJournal);
  - progress: each unit logs its counts on a topic of this run (Worker.log_event), at most once
    a second, and a heartbeat every HEARTBEAT_S seconds while it runs, so the client can tell a
    long history from a unit whose messages no longer arrive: after SILENCE_S seconds without a
    word from any unit (or a result), it says so and ends (exit 2), never waiting forever;
  - stop: a Dask Event of this run, which each unit polls (at most once a second; polling is a
    round trip to the scheduler) as its budget's stop flag, so Ctrl-C ends the units and what they
    found still comes back, like local workers; those still running after GIVE_UP_S are cancelled.
    The workers of local:N ignore SIGINT (a terminal's Ctrl-C reaches every process of the
    group): the client alone decides, as with --jobs;
  - a worker that dies takes its unit with it; the scheduler runs the unit again elsewhere (up to
    its allowed-failures, 3 by default), and a unit that fails that often ends the run as an
    error (exit 2) after what the others found is written; so does a unit that raises.
"""
from __future__ import annotations

import logging
import math
import os
import signal
import threading
import time
import uuid
import warnings
from pathlib import Path

import distributed
from distributed import Client, Event, LocalCluster
from distributed.diagnostics.plugin import WorkerPlugin

from crashcheck.crashsim.errors import CrashcheckError
from crashcheck.harness.run.batch import Share, fuzz_batch, ignore_sigint, stamp
from crashcheck.harness.run.config import LANES
from crashcheck.harness.core.budget import RunInterrupted, deferred_signals, pending_signal, signal_name, swallowed_signal
from crashcheck.harness.core.errors import UsageError
from crashcheck.harness.run.executors import give_up_s, throttled
from crashcheck.harness.run.journal import Journal
from crashcheck.harness.run.wire import pack, unpack

WORKERS_TIMEOUT_S = 60        # a fresh cluster may take this long to have a worker
HEARTBEAT_S = 5.0             # a running unit says it is alive this often
# The client gives up on a run none of whose units has said anything for this long (seconds;
# $CRASHCHECK_DASK_SILENCE_S changes it). Units queued behind other work say nothing either.
SILENCE_S = 120.0


def silence_s() -> float:
    """SILENCE_S, or $CRASHCHECK_DASK_SILENCE_S (a positive number of seconds)."""
    text = os.environ.get("CRASHCHECK_DASK_SILENCE_S")
    if not text:
        return SILENCE_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise UsageError(f"CRASHCHECK_DASK_SILENCE_S={text}: give a positive number of seconds")
    return value


class _StopFlag:
    """A budget's stop flag on a Dask worker: set by the client through the run's Event."""

    def __init__(self, name: str) -> None:
        self.name, self.last, self.set_ = name, 0.0, False

    def is_set(self) -> bool:
        if _TERMINATED.is_set():
            return True
        now = time.monotonic()
        if not self.set_ and now - self.last >= 1.0:
            self.last = now
            try:
                self.set_ = Event(self.name).is_set()
            except Exception:      # noqa: BLE001 - the scheduler gone: the client is too
                self.set_ = True
        return self.set_

    def set(self) -> None:
        self.set_ = True          # this unit only; the client decides for the others


class _Heartbeat:
    """While in its `with`, calls BEAT every EVERY seconds from a thread of its own (a history
    may take minutes, and the unit says nothing between histories)."""

    def __init__(self, beat, every: float) -> None:
        self.beat, self.every, self.done = beat, every, threading.Event()

    def _run(self) -> None:
        while not self.done.wait(self.every):
            try:
                self.beat()
            except Exception:      # noqa: BLE001 - the worker closing: the client will notice
                return

    def __enter__(self):
        threading.Thread(target=self._run, daemon=True, name="crashcheck-heartbeat").start()
        return self

    def __exit__(self, *exc) -> None:
        self.done.set()


class TopicJournal(Journal):
    """The journal a unit writes on a Dask worker, which may not see the client's files: each line
    goes to the client on the run's topic, and the client appends it to the run's journal, so a
    bug is journaled the moment it is found, as with --jobs."""

    def __init__(self, topic: str) -> None:
        super().__init__(Path("/dev/null"))
        self.topic = topic

    def append(self, entry: dict) -> None:
        distributed.get_worker().log_event(self.topic, pack((-1, "journal", entry)))


# SIGTERM reached this worker process (local:N): its unit stops as at the client's stop, and
# says it was interrupted (a unit that stopped early must never pass for a whole one).
_TERMINATED = threading.Event()


class LeaveSigintToTheClient(WorkerPlugin):
    """On the workers of local:N: Ctrl-C in the terminal reaches every process of its group, and a
    worker that took it would die with its unit's findings; the client stops the units instead.
    SIGTERM (to the group, or to a worker alone) stops the worker's unit, keeping what it found,
    as it does a --jobs worker; the nanny ends the process when the cluster closes."""

    def setup(self, worker) -> None:
        ignore_sigint()
        try:
            signal.signal(signal.SIGTERM, lambda *_: _TERMINATED.set())
        except ValueError:      # not the main thread: leave SIGTERM as Dask has it
            return


# One unit at a time in a worker process, whatever its --nthreads: a unit holds Hypothesis's
# engine clock still (harness/run/strategies.py held_engine_clock), a process-wide patch that a
# second unit ending first would undo under the first one.
_ONE_UNIT = threading.Lock()


def run_unit(unit: bytes, index: int, stop_name: str, topic: str) -> bytes:
    """The task a worker runs: one unit (packed), its progress and heartbeats logged on TOPIC as
    packed (index, kind, payload). Returns, packed, ("result", its TargetResult), or what ended
    it: ("setup", the CrashcheckError it raised) or ("error", one line). The task itself never
    raises: Dask would have to send the exception and its traceback, and one it cannot pickle
    left the client's future unresolved."""
    # Hypothesis warns when the global `random` state moves while a strategy draws; in a Dask worker
    # the worker's own threads move it (heartbeats, retries), not our strategies: not the user's news.
    warnings.filterwarnings("ignore", message="Do not use the `random` module inside strategies")
    worker = distributed.get_worker()

    def say(kind: str, payload) -> None:
        worker.log_event(topic, pack((index, kind, payload)))
    progress = throttled(lambda p: say("progress", p))
    with _Heartbeat(lambda: say("alive", None), HEARTBEAT_S), _ONE_UNIT:
        try:
            out = fuzz_batch(unpack(unit), _StopFlag(stop_name), progress)
            if _TERMINATED.is_set():
                out.interrupted = out.interrupted or "SIGTERM"
            return pack(("result", out))
        except CrashcheckError as exc:
            try:
                return pack(("setup", unpack(pack(exc))))      # (it must also unpickle)
            except Exception:      # noqa: BLE001 - its message is what the user needs
                return pack(("setup", UsageError(str(exc))))
        except Exception as exc:      # noqa: BLE001 - reported to the client in one line
            return pack(("error", f"{type(exc).__name__}: {_first_line(exc)}"))


def heard(msg) -> tuple[int, str, object] | None:
    """A message of this run's topic as (unit index, kind, payload); None if it is not one."""
    try:
        index, kind, payload = unpack(msg)
    except Exception:      # noqa: BLE001 - someone else's event on our topic: not ours to read
        return None
    return index, kind, payload


class DaskExecutor:
    def __init__(self, local: int | None = None, address: str | None = None) -> None:
        self.silence_s = silence_s()              # (a bad value: one line before any start-up)
        self.cluster = None
        self.client_journal: Journal | None = None
        self.interrupted: str | None = None      # a signal came while the cluster was starting
        run = uuid.uuid4().hex[:12]
        self.stop_name, self.topic = f"crashcheck-stop-{run}", f"crashcheck-progress-{run}"
        try:
            self._connect(local, address)
        except KeyboardInterrupt as exc:
            self.interrupted = swallowed_signal() or signal_name(exc)
        except Exception:
            if swallowed_signal() is None:
                raise
            self.interrupted = swallowed_signal()   # (a start the signal cut short)
        self.interrupted = self.interrupted or swallowed_signal()
        if self.interrupted is not None:
            # Ctrl-C or SIGTERM while starting: no unit runs, and the run ends as interrupted
            # (its results say so), as a local run interrupted before its first history does.
            with deferred_signals():
                self.close()
        self.slots = max(1, len(self.client.nthreads())) if self.interrupted is None else 1

    def _connect(self, local: int | None, address: str | None) -> None:
        if local is not None:
            self.cluster = LocalCluster(n_workers=local, threads_per_worker=1, processes=True,
                                        dashboard_address=None, silence_logs=logging.ERROR)
            self.client = Client(self.cluster)
            self.client.register_plugin(LeaveSigintToTheClient(), name="crashcheck-sigint")
        else:
            try:
                # (Dask's own setting, distributed.comm.timeouts.connect: 30 s unless changed)
                self.client = Client(address)
            except (OSError, TimeoutError) as exc:
                raise UsageError(f"cannot reach the Dask scheduler at {address} ({_first_line(exc)}); "
                                 "is `dask scheduler` running there?") from None
        try:
            self.client.wait_for_workers(1, timeout=WORKERS_TIMEOUT_S)
        except (TimeoutError, OSError):
            self.close()
            raise UsageError(f"the Dask scheduler at {address or 'local'} has no workers after "
                             f"{WORKERS_TIMEOUT_S} s; start some with `dask worker SCHEDULER`") from None

    def shares(self, config) -> int:
        # With --examples, one unit per lane: the most units that still find what --jobs 1 finds
        # (a lost unit costs the least). With a budget, one per slot, all running until it ends.
        return LANES if config.examples else min(LANES, self.slots)

    def journal(self, journal):
        self.client_journal = journal      # (run appends what the units send it)
        return None if journal is None else TopicJournal(self.topic)

    def build(self, build, structure: str, bug: str | None) -> str:
        return build(structure, bug)

    def close(self) -> None:
        for thing in (getattr(self, "client", None), self.cluster):
            if thing is not None:
                try:
                    thing.close()
                except Exception:      # noqa: BLE001 - closing: nothing left to save
                    pass

    def _abandon(self, futures: dict) -> list[Share]:
        """Cancel the units still out (FUTURES, emptied); the units they were."""
        units = [u for _, u in futures.values()]
        pending = list(futures)
        futures.clear()
        try:
            self.client.cancel(pending)
        except Exception:      # noqa: BLE001 - the scheduler gone: nothing left to cancel
            pass
        return units

    def run(self, units: list[Share], on_progress=None):
        if self.interrupted is not None:
            return [], [], self.interrupted, None
        patience = give_up_s()
        lock = threading.Lock()
        reports: list = []

        def keep(event) -> None:   # runs on the client's event loop: just keep it
            with lock:
                reports.append(event[1])
        self.client.subscribe_topic(self.topic, keep)
        stop = Event(self.stop_name, client=self.client)
        futures = {self.client.submit(run_unit, pack(stamp(u)), i, self.stop_name, self.topic, pure=False,
                                      key=f"crashcheck-unit-{self.topic[-12:]}-{i}"): (i, u)
                   for i, u in enumerate(units)}
        results, lost = [], []
        interrupted: str | None = None
        error: str | None = None
        usage: CrashcheckError | None = None
        give_up = None
        last_word = time.monotonic()
        while futures:
            try:
                try:
                    distributed.wait(list(futures), timeout=0.5, return_when="FIRST_COMPLETED")
                except (TimeoutError, distributed.TimeoutError):
                    pass
                for fut in [f for f in futures if f.done()]:
                    i, unit = futures.pop(fut)
                    last_word = time.monotonic()
                    got = _outcome(fut, unit)
                    if isinstance(got, (CrashcheckError, str)):
                        if isinstance(got, str):
                            error = error or got
                        else:
                            usage = usage or got
                        lost.append(unit)
                        _set(stop)
                        give_up = give_up or time.monotonic() + patience
                    else:
                        results.append((unit, got))
                with lock:
                    heard_now, reports[:] = list(reports), []
                for msg in heard_now:
                    report = heard(msg)
                    if report is None:
                        continue
                    last_word = time.monotonic()
                    index, kind, payload = report
                    if kind == "progress" and on_progress is not None:
                        on_progress(index, payload)
                    elif kind == "journal" and self.client_journal is not None:
                        try:
                            self.client_journal.append(payload)
                        except OSError:
                            pass          # (the journal must never take the run down)
                if interrupted is None and swallowed_signal():
                    raise RunInterrupted(pending_signal())
                now = time.monotonic()
                if give_up is None and now - last_word > self.silence_s:
                    error = (f"no word from any Dask worker for {self.silence_s:g} s ({len(futures)} of "
                             f"{len(units)} units unfinished): their messages no longer arrive, or no "
                             "worker is left to run them; see the workers' logs")
                    give_up = now
                if give_up is not None and now >= give_up:
                    lost += self._abandon(futures)
            except KeyboardInterrupt as exc:
                interrupted = interrupted or swallowed_signal() or signal_name(exc)
                _set(stop)
                give_up = min(give_up or float("inf"), time.monotonic() + patience)
            except Exception as exc:      # noqa: BLE001 - the cluster failed under us (scheduler gone)
                error = error or f"the Dask cluster failed: {type(exc).__name__}: {_first_line(exc)}"
                lost += self._abandon(futures)
        try:
            self.client.unsubscribe_topic(self.topic)
        except Exception:      # noqa: BLE001
            pass
        if usage is not None:
            raise usage
        return results, lost, interrupted, error


def _set(stop) -> None:
    """Tell every unit to stop (through the run's Event), if the scheduler still listens."""
    try:
        stop.set()
    except Exception:      # noqa: BLE001 - no scheduler: no unit is left to tell
        pass


def _outcome(fut, unit: Share):
    """A finished future's TargetResult; else why its unit gave none: the CrashcheckError it
    raised (a set-up fault, to raise again), or one line saying what happened to it."""
    what = f"unit {unit.share} of {unit.structure}{' --bug ' + unit.bug if unit.bug else ''}"
    if fut.status == "finished":
        try:
            kind, got = unpack(fut.result())
        except Exception as exc:      # noqa: BLE001 - its result did not survive the trip
            return f"the result of {what} could not be read back: {type(exc).__name__}: {_first_line(exc)}"
        return f"{what} failed on its Dask worker: {got}" if kind == "error" else got
    if fut.status == "cancelled":
        return f"{what} was cancelled on the cluster"
    exc = fut.exception()
    if isinstance(exc, distributed.KilledWorker):
        return (f"{what} was lost: its worker died each time the scheduler ran it "
                f"({_first_line(exc)})")
    return f"{what} failed on its Dask worker: {type(exc).__name__}: {_first_line(exc)}"


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


__all__ = ["DaskExecutor", "heard", "run_unit"]

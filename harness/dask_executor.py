"""The Dask executor: a campaign's units as futures on a Dask distributed cluster.

Owns connecting to a scheduler (`--dask tcp://HOST:8786`) or starting a LocalCluster of worker
processes (`--dask local:N`), and running units there with the interface of
harness/executors.py. Imported only when --dask is given: Dask is optional (crashcheck[dask]).

How the pieces travel:
  - a unit goes out as a future (harness/batch.py fuzz_batch on the worker); its TargetResult
    comes back; traces, pools and images stay in the worker's $CRASHCHECK_WORKDIR;
  - progress: each unit logs its counts on a topic of this run (Worker.log_event), at most once
    a second, and the client's subscription passes them on;
  - stop: a Dask Event of this run, which each unit polls (at most once a second; polling is a
    round trip to the scheduler) as its budget's stop flag, so Ctrl-C ends the units and what they
    found still comes back, like local workers; those still running after GIVE_UP_S are cancelled;
  - a worker that dies takes its unit with it; the scheduler runs the unit again elsewhere (up to
    its allowed-failures, 3 by default), and only a unit that fails that often is lost.
"""
from __future__ import annotations

import logging
import threading
import time
import uuid
import warnings

import distributed
from distributed import Client, Event, LocalCluster

from crashsim.errors import CrashcheckError
from harness.batch import Unit, fuzz_batch, stamp
from harness.budget import RunInterrupted, pending_signal, signal_name, swallowed_signal
from harness.errors import UsageError
from harness.executors import GIVE_UP_S, throttled

WORKERS_TIMEOUT_S = 60        # a fresh cluster may take this long to have a worker


class _StopFlag:
    """A budget's stop flag on a Dask worker: set by the client through the run's Event."""

    def __init__(self, name: str) -> None:
        self.name, self.last, self.set_ = name, 0.0, False

    def is_set(self) -> bool:
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


# One unit at a time in a worker process, whatever its --nthreads: a unit holds Hypothesis's
# engine clock still (harness/strategies.py held_engine_clock), a process-wide patch that a
# second unit ending first would undo under the first one.
_ONE_UNIT = threading.Lock()


def run_unit(unit: Unit, index: int, stop_name: str, topic: str):
    """The task a worker runs: one unit, its progress logged on TOPIC."""
    # Hypothesis warns when the global `random` state moves while a strategy draws; in a Dask worker
    # the worker's own threads move it (heartbeats, retries), not our strategies: not the user's news.
    warnings.filterwarnings("ignore", message="Do not use the `random` module inside strategies")
    worker = distributed.get_worker()
    progress = throttled(lambda p: worker.log_event(topic, {"index": index, **p}))
    with _ONE_UNIT:
        return fuzz_batch(unit, _StopFlag(stop_name), progress)


class DaskExecutor:
    def __init__(self, local: int | None = None, address: str | None = None) -> None:
        self.cluster = None
        run = uuid.uuid4().hex[:12]
        self.stop_name, self.topic = f"crashcheck-stop-{run}", f"crashcheck-progress-{run}"
        if local is not None:
            self.cluster = LocalCluster(n_workers=local, threads_per_worker=1, processes=True,
                                        dashboard_address=None, silence_logs=logging.ERROR)
            self.client = Client(self.cluster)
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
        self.slots = max(1, len(self.client.nthreads()))     # worker processes (_ONE_UNIT)

    def shares(self, config) -> int:
        from harness.fuzz import LANES
        # With --examples, one unit per lane: the most units that still find what --jobs 1 finds
        # (a lost unit costs the least). With a budget, one per slot, all running until it ends.
        return LANES if config.examples else min(LANES, self.slots)

    def journal(self, journal):
        return None               # the workers may not see the client's files

    def build(self, build, structure: str, bug: str | None) -> str:
        return build(structure, bug)

    def close(self) -> None:
        for thing in (getattr(self, "client", None), self.cluster):
            if thing is not None:
                try:
                    thing.close()
                except Exception:      # noqa: BLE001 - closing: nothing left to save
                    pass

    def run(self, units: list[Unit], on_progress=None):
        lock = threading.Lock()
        reports: list[dict] = []

        def heard(event) -> None:   # runs on the client's event loop: just keep it
            with lock:
                reports.append(event[1])
        self.client.subscribe_topic(self.topic, heard)
        stop = Event(self.stop_name, client=self.client)
        futures = {self.client.submit(run_unit, stamp(u), i, self.stop_name, self.topic, pure=False,
                                      key=f"crashcheck-unit-{self.topic[-12:]}-{i}"): (i, u)
                   for i, u in enumerate(units)}
        results, lost = [], []
        interrupted: str | None = None
        failure: BaseException | None = None
        give_up = None
        while futures:
            try:
                try:
                    distributed.wait(list(futures), timeout=0.5, return_when="FIRST_COMPLETED")
                except (TimeoutError, distributed.TimeoutError):
                    pass
                for fut in [f for f in futures if f.done()]:
                    i, unit = futures.pop(fut)
                    got = _outcome(fut)
                    if got is None:
                        lost.append(unit)
                    elif isinstance(got, BaseException):
                        if failure is None:
                            failure = got
                            stop.set()
                    else:
                        results.append((unit, got))
                with lock:
                    heard_now, reports[:] = list(reports), []
                for p in heard_now:
                    if on_progress is not None:
                        on_progress(p.pop("index"), p)
                if interrupted is None and swallowed_signal():
                    raise RunInterrupted(pending_signal())
                if give_up is not None and time.monotonic() > give_up:
                    self.client.cancel(list(futures))
                    lost += [u for _, u in futures.values()]
                    futures.clear()
            except KeyboardInterrupt as exc:
                interrupted = interrupted or swallowed_signal() or signal_name(exc)
                stop.set()
                give_up = time.monotonic() + GIVE_UP_S
        try:
            self.client.unsubscribe_topic(self.topic)
        except Exception:      # noqa: BLE001
            pass
        if failure is not None:
            raise failure
        return results, lost, interrupted


def _outcome(fut):
    """A finished future's TargetResult, the exception it raised (ours, to re-raise), or None when
    its unit was lost (its worker died more often than the scheduler retries, or it was cancelled)."""
    if fut.status == "finished":
        return fut.result()
    if fut.status == "cancelled":
        return None
    exc = fut.exception()
    if isinstance(exc, distributed.KilledWorker):
        return None
    if isinstance(exc, CrashcheckError):
        return exc
    return RuntimeError(f"a Dask unit failed: {type(exc).__name__}: {exc}")


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


__all__ = ["DaskExecutor", "run_unit"]

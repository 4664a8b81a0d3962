"""What crosses a Dask cluster cannot overflow: Dask's own messages are msgpack, whose
integers end at 2^64, and a unit's legal-state counts pass that (WOART's bulk-loaded histories
reach about 10^80, a point with a thousand pending pieces about 10^301). The units' progress
reports, heartbeats and results go through harness/run/wire.py, and arrive exact.

In this process, with a stand-in worker: run_unit (the task a Dask worker runs) is given a unit
whose progress and result carry such counts, and everything it logs or returns is put through
Dask's own message encoding (distributed.protocol dumps/loads) and read back as the client reads it.
"""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("distributed")
from distributed.protocol import dumps, loads

from crashcheck.harness.run import dask_executor
from crashcheck.harness.run.batch import Share
from crashcheck.harness.run.config import Config
from crashcheck.harness.run.results import Progress, Stats, TargetResult
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.run.wire import pack, unpack

COUNTS = [2 ** 64, 2 ** 64 + 1, 10 ** 80, 10 ** 300 + 7]


def _over_msgpack(msg):
    """MSG as Dask carries a message: msgpack framing, then back."""
    return loads(dumps({"op": "log-event", "topic": "t", "msg": msg}))["msg"]


def test_a_plain_integer_past_2_64_breaks_dask_messages():
    # Why the wire form exists: this is what dropped a worker's batch of messages (and with it
    # the report that its unit had finished), so the client waited forever.
    with pytest.raises(Exception, match="out of range|too big|overflow|Integer value"):
        dumps({"op": "log-event", "topic": "t", "msg": {"states": 2 ** 64}})


@pytest.mark.parametrize("value", [0, -1, 2 ** 63 - 1, *COUNTS, -(10 ** 300)])
def test_pack_round_trips_through_dask_messages(value):
    payload = {"states": value, "nested": [(value, str(value))], "float": 1.5, "none": None}
    assert unpack(_over_msgpack(pack(payload))) == payload


class _Worker:
    def __init__(self) -> None:
        self.logged: list = []

    def log_event(self, topic, msg) -> None:
        self.logged.append((topic, _over_msgpack(msg)))


@pytest.mark.parametrize("huge", COUNTS)
def test_run_unit_progress_and_result_cross_dask_exact(huge, monkeypatch):
    worker = _Worker()
    monkeypatch.setattr(dask_executor.distributed, "get_worker", lambda: worker)
    progress = Progress("woart", "grow-no-free", histories=3, states=huge, executions=huge + 1, points=huge,
                        complete=huge - 1, bugs=1, elapsed=2.0)
    stats = Stats(histories=3, crash_points=huge, states_legal=huge * 10, states_explored=huge,
                  states_checked=5, executions=huge + 2)

    def fake_batch(unit, stop, report, parent_pid=None):
        assert unit.structure == "woart" and unit.share == 2
        report(progress)
        return TargetResult(unit.structure, unit.bug, stats, warnings=[f"w {huge}"])
    monkeypatch.setattr(dask_executor, "fuzz_batch", fake_batch)
    unit = Share("woart", "grow-no-free", Settings(), Config(examples=16), 2, Path("b"), None)

    sent = dask_executor.run_unit(pack(unit), 5, "crashcheck-stop-x", "topic-x")
    kind, result = unpack(_over_msgpack(sent))
    assert kind == "result" and result.stats == stats and result.warnings == [f"w {huge}"]
    reports = [dask_executor.heard(msg) for topic, msg in worker.logged]
    assert all(topic == "topic-x" for topic, _ in worker.logged)
    assert (5, "progress", progress) in reports


def test_someone_elses_message_on_the_topic_is_ignored():
    assert dask_executor.heard({"index": 1, "states": 3}) is None
    assert dask_executor.heard(b"not a pickle") is None
    assert dask_executor.heard(pack((1, "alive", None))) == (1, "alive", None)


class _Unpicklable(Exception):
    def __reduce__(self):
        raise TypeError("cannot pickle this")


@pytest.mark.parametrize("raised, want", [
    (RuntimeError("boom\nsecond line"), ("error", "RuntimeError: boom")),
    (_Unpicklable("odd"), ("error", "_Unpicklable: odd")),
])
def test_a_unit_that_raises_returns_one_line(raised, want, monkeypatch):
    # Dask never has to send our exception or its traceback (one it could not pickle left the
    # client's future unresolved): the task returns one line saying what ended it.
    monkeypatch.setattr(dask_executor.distributed, "get_worker", lambda: _Worker())

    def fake_batch(unit, stop, report, parent_pid=None):
        raise raised
    monkeypatch.setattr(dask_executor, "fuzz_batch", fake_batch)
    unit = Share("wort", None, Settings(), Config(examples=1), 0, Path("b"), None)
    assert unpack(_over_msgpack(dask_executor.run_unit(pack(unit), 0, "s", "t"))) == want

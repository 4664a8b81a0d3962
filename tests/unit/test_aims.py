"""Aimed schedules (harness/check/aims.py): which loads of a threaded trace another thread's
later store conflicts with, and the scheduler specs drawn from them."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from crashcheck.crashsim.trace import read_trace
from crashcheck.crashsim.trace_writer import TraceWriter
from crashcheck.harness.check import aims
from crashcheck.harness.check.threads import make_threaded
from crashcheck.harness.core.errors import SetupError

SLOT, KEY, VAL, OTHER = 0x100, 0x140, 0x148, 0x200


def _trace(tmp_path, build, loads=True):
    w = TraceWriter(pool_size=1 << 12, loads=loads)
    sites = {name: w.site("t.c", 10 + i, name) for i, name in enumerate(
        ("slot", "key", "val", "publish", "free", "fill", "mine"))}
    build(w, sites)
    return read_trace(w.write(tmp_path / f"t{int(loads)}.trace")), sites


def _reader_and_writer(w, s):
    w.store(KEY, b"\x01" * 16, tid=0, site=s["fill"])          # the load phase: no thread meets it
    w.op_begin(0, tid=1)
    w.load(SLOT, 8, tid=1, site=s["slot"])
    w.load(KEY, 8, tid=1, site=s["key"])
    w.load(VAL, 8, tid=1, site=s["val"])
    w.load(VAL, 8, tid=1, site=s["val"])                       # its second load there
    w.op_begin(1, tid=2)
    w.store(SLOT, b"\x02" * 8, tid=2, site=s["publish"])
    w.store(KEY, b"\x00" * 16, tid=2, site=s["free"])          # one store over both words
    w.store(OTHER, b"\x03" * 8, tid=2, site=s["mine"])         # read by nobody
    w.op_end(1, tid=2)
    w.op_end(0, tid=1)


def test_a_load_another_thread_stores_later_is_a_conflict(tmp_path):
    trace, s = _trace(tmp_path, _reader_and_writer)
    got = [(c.tid, c.site, c.nth, c.store_tid, c.store_site) for c in aims.conflicts(trace)]
    # one entry per load (the free's 16 bytes cover key and value), the latest load of a site
    assert got == [(1, s["slot"], 1, 2, s["publish"]), (1, s["key"], 1, 2, s["free"]),
                   (1, s["val"], 2, 2, s["free"])]


def test_a_threads_own_store_and_an_earlier_store_are_no_conflict(tmp_path):
    def build(w, s):
        w.op_begin(0, tid=1)
        w.store(SLOT, b"\x01" * 8, tid=2, site=s["publish"])   # before the load: read, not changed under it
        w.load(SLOT, 8, tid=1, site=s["slot"])
        w.store(SLOT, b"\x02" * 8, tid=1, site=s["mine"])      # its own
        w.op_end(0, tid=1)
    trace, _ = _trace(tmp_path, build)
    assert aims.conflicts(trace) == []


def test_loads_before_the_start_event_are_not_aimed_at(tmp_path):
    trace, s = _trace(tmp_path, _reader_and_writer)
    start = next(i for i, ev in enumerate(trace.events) if ev.kind == "load" and ev.site == s["val"])
    assert [c.site for c in aims.conflicts(trace, start)] == [s["val"]]


def test_picks_are_distinct_pairs_drawn_by_the_seed(tmp_path):
    trace, s = _trace(tmp_path, _reader_and_writer)
    found = aims.conflicts(trace)
    picks = aims.pick(found, 5, n=3)
    assert picks == aims.pick(found, 5, n=3)                   # the same seed aims the same way
    fields = [p.split(":") for p in picks]
    assert all(f[0] == "aim" and f[2] == "1" and f[5] in {"1", "2", "3"} for f in fields)
    assert sorted(int(f[3]) for f in fields) == sorted([s["slot"], s["key"], s["val"]])
    assert {tuple(aims.pick(found, seed, n=1)) for seed in range(20)} != {tuple(picks[:1])}
    assert aims.pick(found, 5, n=0) == [] and aims.pick([], 5) == []


def test_only_a_drawn_schedule_with_loads_is_aimed(tmp_path):
    trace, _ = _trace(tmp_path, _reader_and_writer)
    ops = make_threaded([], [["a"], ["b"]], "random:12")
    assert aims.worth_aiming(ops, trace) and aims.seed_of(ops.sched) == 12
    assert aims.seed_of("pct:7:3:100") == 7 and aims.seed_of("odd") == 0
    aimed = aims.aimed(ops, "aim:1:1:2:1:1")
    assert (list(aimed), aimed.thread_of, aimed.sched) == (["a", "b"], (1, 2), "aim:1:1:2:1:1")
    assert not aims.worth_aiming(aimed, trace)                 # an aim is not aimed again
    assert not aims.worth_aiming(make_threaded([], [["a"], ["b"]], "random:1", "# a replay\n"), trace)
    no_loads, _ = _trace(tmp_path, _reader_and_writer, loads=False)
    assert not aims.worth_aiming(ops, no_loads)


def test_pairs_new_to_the_run_go_first(tmp_path):
    """The run's record of pairs aimed at before: the least aimed pair goes first, so three
    histories with the same conflicts and the same seed aim at three different pairs."""
    trace, s = _trace(tmp_path, _reader_and_writer)
    found = aims.conflicts(trace)
    before: dict = {}
    sites = [int(aims.pick(found, 5, n=1, aimed_before=before)[0].split(":")[3]) for _ in range(3)]
    assert sorted(sites) == sorted([s["slot"], s["key"], s["val"]])
    assert sorted(before.values()) == [1, 1, 1]
    # without the record the same seed aims the same way each time
    assert len({aims.pick(found, 5, n=1)[0] for _ in range(3)}) == 1


def test_a_driver_without_the_aim_strategy_turns_aimed_runs_off(tmp_path):
    """A structure built by an older crashcheck: its scheduler refuses aim (one line, exit 2, a
    SetupError); aimed runs are extra, so the run goes on without them, with a warning."""
    trace, _ = _trace(tmp_path, _reader_and_writer)
    found = aims.conflicts(trace)
    ops = make_threaded([], [["a"], ["b"]], "random:3")
    calls = []

    def old_driver(o):
        calls.append(o.sched)
        raise SetupError(f"the driver of mine could not start: crashcheck: CRASHCHECK_SCHED={o.sched}: "
                         "unknown strategy (expected random:SEED, ...)")
    specs = aims.pick(found, 3)
    out, runs, warning = aims.first_failing(old_driver, ops, specs, "mine")
    assert (out, runs, len(calls)) == (None, 1, 1)
    assert "aimed runs off" in warning and "crashcheck build mine" in warning

    def broken(o):
        raise SetupError("the driver of mine could not start: no such file")
    with pytest.raises(SetupError):
        aims.first_failing(broken, ops, specs, "mine")

    verdicts = iter([[], ["a finding"], []])
    out, runs, warning = aims.first_failing(
        lambda o: SimpleNamespace(findings=next(verdicts), ops=o), ops, specs, "mine")
    assert (runs, warning, out.findings) == (2, "", ["a finding"]) and out.ops.sched.startswith("aim:")


def test_a_history_checked_again_is_aimed_the_same_way(tmp_path, monkeypatch):
    """The feedback changes what the next history aims at, never what the same history does:
    a determinism probe or Hypothesis's replay of an example checks it again."""
    monkeypatch.setattr(aims, "PER_HISTORY", 1)
    trace, _ = _trace(tmp_path, _reader_and_writer)
    aimer = aims.Aimer()
    ops = make_threaded([], [["a"], ["b"]], "random:3")
    first = aimer.specs(ops, trace, 0)
    other = aimer.specs(make_threaded([], [["a"], ["c"]], "random:3"), trace, 0)
    assert first != other                                      # the next history: other pairs first
    assert aimer.specs(make_threaded([], [["a"], ["b"]], "random:3"), trace, 0) == first


def test_a_pair_aimed_at_often_enough_is_left_alone(tmp_path):
    trace, s = _trace(tmp_path, _reader_and_writer)
    found = aims.conflicts(trace)
    by_site = {c.site: (c.site, c.store_site) for c in found}
    before = {by_site[s["slot"]]: aims.SATURATED, by_site[s["key"]]: aims.SATURATED - 1}
    picked = [int(p.split(":")[3]) for p in aims.pick(found, 5, n=3, aimed_before=before)]
    assert picked == [s["val"], s["key"]]                      # the least aimed first; the slot's pair no more
    assert aims.pick(found, 5, n=3, aimed_before={p: aims.SATURATED for p in by_site.values()}) == []

"""The runner's read log, byte by byte, and the answers crashcheck.crashsim.lazy.ReadMemo reuses by it.

A LAZY request's answer says which bytes of the pool its check read ("read": lines, "partial": the
lines read only in part, with a mask of the bytes), whether the request had undetermined lines or
none (a state checked on its own, which the reused check process serves). The checker is
tests/runner_fixtures/lazyread.c: with followup "1" it reads word 0 and, when word 0 is 0,
compares its first 4 bytes with themselves; when word 0 is 2 + (16 << 8) it writes word 16 and
reads it back.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from crashcheck.crashsim.explore import explore
from crashcheck.crashsim.image import encode_writes
from crashcheck.crashsim.lazy import ReadMemo, bare_spec
from crashcheck.crashsim.runner_client import Runner
from crashcheck.crashsim.simulate import Simulator
from crashcheck.crashsim.trace_writer import TraceWriter

HERE = Path(__file__).resolve().parents[1]      # tests/
POOL = 256
CHAIN = (2 | 16 << 8).to_bytes(8, "little")       # word 0: write word 16, read it back


@pytest.fixture(scope="module")
def lazyread(tmp_path_factory):
    import sys
    sys.path.insert(0, str(HERE / "runner_fixtures"))
    from build_fixture import build as build_fixture
    return build_fixture("lazyread", tmp_path_factory.mktemp("readlog"), instrumented=True)


def serve(lazyread, reuse: bool):
    base = TraceWriter(pool_size=POOL).pool_base
    env = dict(os.environ, CRASHCHECK_POOL_ADDR=f"{base:x}", CRASHCHECK_RUNNER_REUSE="1" if reuse else "0")
    return Runner([str(lazyread), "serve", str(POOL)], pool_base=base, pool_size=POOL, env=env)


def logs(runner, requests):
    """The lazy logs of bare LAZY requests: (line size, writes) each, followup "1"."""
    first = runner.next_state
    for i, (ls, writes) in enumerate(requests):
        runner.queue_lazy(first + i, bare_spec(ls), "1", encode_writes(writes))
    res = dict(runner.flush())
    out = []
    for i in range(len(requests)):
        assert res[first + i].status == "ok", res[first + i]
        log = {k: res[first + i].lazy[k] for k in ("read", "branches", "allowed")}
        log["partial"] = [[line, int(mask, 16)] for line, mask in res[first + i].lazy["partial"]]
        out.append(log)
    return out


@pytest.mark.parametrize("reuse", [True, False], ids=["reused-process", "fork"])
def test_the_read_log_names_the_bytes_read_and_is_cleared_between_checks(lazyread, reuse):
    with serve(lazyread, reuse) as r:
        assert r.hello["reuse"] is reuse
        got = logs(r, [(64, []), (64, [(0, CHAIN)]), (64, []), (8, [(0, CHAIN)]), (16, []), (256, [])])
    none = {"branches": [], "allowed": []}
    # word 0 (bytes 0-7) of line 0; with the chain also word 16 (bytes 128-135, line 2)
    assert got[0] == dict(none, read=[[0, 1]], partial=[[0, 0xff]])
    assert got[1] == dict(none, read=[[0, 1], [2, 1]], partial=[[0, 0xff], [2, 0xff]])
    # the previous check's word 16 is not in the next one's log
    assert got[2] == dict(none, read=[[0, 1]], partial=[[0, 0xff]])
    # 8-byte lines: words 0 and 16 are whole lines
    assert got[3] == dict(none, read=[[0, 1], [16, 1]], partial=[])
    assert got[4] == dict(none, read=[[0, 1]], partial=[[0, 0xff]])
    # a 256-byte line: its mask (hex) has a bit per byte
    assert got[5] == dict(none, read=[[0, 1]], partial=[[0, 0xff]])


def test_a_bare_request_is_served_by_the_reused_process(lazyread):
    with serve(lazyread, True) as r:
        logs(r, [(64, [])] * 3)
        pid = r.hello["pid"]
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = f.read().split()
        # one long-lived worker, no child per state left behind nor needed
        assert len(kids) == 1


def one_line_point(stores: list[tuple[int, int]]):
    """A flushed-and-fenced zero line 0 (a first crash point, one legal state), then STORES
    (offset, value) to line 0 left pending at the next fence: their prefixes are its states."""
    w = TraceWriter(pool_size=POOL)
    w.store(64, (1).to_bytes(8, "little"))
    w.flush(64, "clwb")
    w.fence("sfence")
    for off, value in stores:
        w.store(off, value.to_bytes(8, "little"))
    w.fence("sfence")
    return w


def explored(lazyread, w, memo: bool, monkeypatch):
    monkeypatch.setenv("CRASHCHECK_LAZY_MEMO", "1" if memo else "0")
    with serve(lazyread, True) as r:
        sim = Simulator(w.events(), w.image(), line_size=64, region_base=w.pool_base)
        return [o for o in explore(sim, strategy="lazy", runner=r, followup="1")]


@pytest.mark.parametrize("stores,legal", [([(16, 7)], 2), ([(16, 7), (24, 8), (32, 9), (40, 1)], 5)],
                         ids=["state-by-state", "lazy-point"])
def test_a_pending_line_read_only_where_its_states_agree_is_answered_without_a_run(
        lazyread, monkeypatch, stores, legal):
    w = one_line_point(stores)
    # the points after the first: line 0's stores pending (they are never flushed)
    outs = [o for o in explored(lazyread, w, True, monkeypatch) if o.point.index > 0]
    points = {o.point.index for o in outs}
    assert len(points) == 2 and {o.point.legal for o in outs} == {legal}
    # no run: the states that keep a store by what the first point's checks read (the one
    # that keeps none is also the first point's image, which the image cache answers)
    assert all(o.cached_from is not None for o in outs)
    assert all(o.remembered for o in outs if any(o.choice))
    assert sum(o.covers for o in outs) == 2 * legal
    # without the memo each of them runs (but repeats), and gets the same answer
    plain = [o for o in explored(lazyread, w, False, monkeypatch) if o.point.index > 0]
    assert any(o.cached_from is None for o in plain)
    assert {o.result.result["read"][0] for o in plain} == {o.result.result["read"][0] for o in outs} == {0}


@pytest.mark.parametrize("stores,legal", [([(0, 4)], 2), ([(0, 4), (24, 8), (32, 9), (40, 1)], 5)],
                         ids=["state-by-state", "lazy-point"])
def test_a_pending_line_read_where_its_states_differ_is_run(lazyread, monkeypatch, stores, legal):
    w = one_line_point(stores)
    outs = [o for o in explored(lazyread, w, True, monkeypatch) if o.point.index > 0]
    assert {o.point.legal for o in outs} == {legal}
    # word 0 is 0 or 4: the check reads it, so the state that keeps the 4 runs
    assert any(o.cached_from is None and not o.remembered for o in outs)
    assert sorted({o.result.result["read"][0] for o in outs}) == [0, 4]


def test_the_memo_masks_unread_bytes_and_needs_agreement_on_read_ones():
    memo = ReadMemo(64)
    base = bytearray(POOL)
    result = type("R", (), {"status": "ok"})()
    log = {"read": [[0, 1]], "partial": [[0, "ff"]]}
    memo.add("1", log, base, [], 7, result)
    other = bytearray(base)
    other[16:24] = b"\x05" * 8
    assert memo.find("1", other, set()).sid == 7
    other[3] = 1
    assert memo.find("1", other, set()) is None
    assert memo.find("2", base, set()) is None                       # another followup
    # pending line 0: its contents agree on bytes 0-7, or do not
    agree = {0: [bytes(64), bytes(16) + b"\x01" * 48]}
    differ = {0: [bytes(64), b"\x01" + bytes(63)]}
    assert memo.find("1", base, {0}, contents=agree).sid == 7
    assert memo.find("1", base, {0}, contents=differ) is None
    assert memo.find("1", base, {0}) is None                          # contents not known
    # a line read whole needs one content
    memo.add("3", {"read": [[0, 1]], "partial": []}, base, [], 8, result)
    assert memo.find("3", base, {0}, contents=agree) is None
    assert memo.find("3", base, {0}, contents={0: [bytes(64)]}).sid == 8
    # "partial": null (too many to list) counts every read line as read whole
    memo.add("4", {"read": [[0, 1]], "partial": None}, base, [], 9, result)
    assert memo.find("4", base, {0}, contents=agree) is None


def test_a_followup_per_crash_point_is_part_of_what_an_answer_is_reused_for(lazyread, monkeypatch):
    """The continuation after recovery is aimed at each crash (harness/check/crash_oracle.py), so
    the followup differs between crash points, and its reads are the check's reads: an answer is
    reused only for the same followup, and a followup that reads further tells apart the states a
    shorter one could not (lazy's coverage counts stay what the whole check read)."""
    w = TraceWriter(pool_size=POOL)
    w.store(0, (16).to_bytes(8, "little"))        # word 0 names word 2
    w.flush(0, "clwb")
    w.fence("sfence")
    w.store(16, (7).to_bytes(8, "little"))        # word 2, never flushed: pending from here on
    w.fence("sfence")
    w.store(40, (1).to_bytes(8, "little"))
    w.fence("sfence")
    monkeypatch.setenv("CRASHCHECK_LAZY_MEMO", "1")
    with serve(lazyread, True) as r:
        sim = Simulator(w.events(), w.image(), line_size=64, region_base=w.pool_base)
        outs = list(explore(sim, strategy="lazy", runner=r, followup=lambda cp: "1" if cp.index < 2 else "2"))
    assert {o.followup for o in outs} == {"1", "2"}
    # each answer is that of a check that ran the state's own followup (1 or 2 steps of the chain)
    assert all(len(o.result.result["read"]) == 2 * int(o.followup) for o in outs)
    # the longer followup reads word 2, pending: both of its contents were checked
    assert {o.result.result["read"][2] for o in outs if o.followup == "2"} == {0, 7}

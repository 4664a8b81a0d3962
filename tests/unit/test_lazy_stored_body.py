"""A crash point's lazy plan crosses the pipe once: the runner stores its groups (LAZY_BODY) and
every execution of the point names them, carrying only its decisions.

Checked against the plan sent whole with every execution (what the runner did before): the same
executions, classes and answers at every point of random traces, for far fewer bytes; and the
protocol's refusals (a spec naming a body when none is stored, a body that does not parse, a line
size that differs) are one-line errors, after which the runner still serves.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from crashcheck.crashsim.explore import explore
from crashcheck.crashsim.lazy import STORED_BODY
from crashcheck.crashsim.runner_client import REQ_LAZY_BODY, Runner, RunnerError
from crashcheck.crashsim.simulate import Simulator
from crashcheck.crashsim.trace_writer import TraceWriter

HERE = Path(__file__).resolve().parents[1]      # tests/
POOL = 512


@pytest.fixture(scope="module")
def lazyread(tmp_path_factory):
    import sys
    sys.path.insert(0, str(HERE / "runner_fixtures"))
    from build_fixture import build as build_fixture
    return build_fixture("lazyread", tmp_path_factory.mktemp("stored"), instrumented=True)


def _runner(lazyread, reuse: bool = True) -> Runner:
    base = TraceWriter(pool_size=POOL).pool_base
    env = dict(os.environ, CRASHCHECK_POOL_ADDR=f"{base:x}", CRASHCHECK_RUNNER_REUSE="1" if reuse else "0")
    return Runner([str(lazyread), "serve", str(POOL)], pool_base=base, pool_size=POOL, env=env)


def _trace(seed: int) -> Simulator:
    """Words 0 and 1 of four lines stored twice per round without a flush, so every fence's crash
    point has groups with several variants; each word names a word of the next line (lazyread
    follows the chain), so which variants the check tells apart depends on what it read."""
    import random
    rnd = random.Random(seed)
    w = TraceWriter(pool_size=POOL)
    for _ in range(2):
        for line in range(4):
            for word in (0, 0, 1):
                target = (line + 1) % 4 * 64 + 8 * rnd.randrange(2)
                w.store(line * 64 + 8 * word, struct.pack("<Q", target + rnd.randrange(4)))
        w.fence("sfence")
    return Simulator(w.events(), w.image(), line_size=64, region_base=w.pool_base)


def _explore(runner: Runner, sim: Simulator, stored: bool, monkeypatch) -> list[tuple]:
    monkeypatch.setattr(Runner, "lazy_body_supported", property(lambda self: stored))
    return [(o.point.index, o.decisions, o.covers, o.result.status, o.result.result, o.result.lazy)
            for o in explore(sim, strategy="lazy", runner=runner, cache=False, executions=1 << 10)]


@pytest.mark.parametrize("seed", [1, 2])
def test_stored_body_gives_the_same_executions_as_the_whole_spec(lazyread, monkeypatch, seed):
    with _runner(lazyread) as r:
        assert r.hello["lazy_body"] is True
        before = r.stats.bytes_out
        whole = _explore(r, _trace(seed), False, monkeypatch)
        whole_bytes = r.stats.bytes_out - before
        before = r.stats.bytes_out
        stored = _explore(r, _trace(seed), True, monkeypatch)
        stored_bytes = r.stats.bytes_out - before
    assert stored == whole
    executions = sum(1 for x in whole if x[1] is not None)
    assert executions > len({x[0] for x in whole})      # points with more than one execution
    assert stored_bytes < whole_bytes


def test_executions_naming_the_stored_body_run_in_the_reused_check_process(lazyread, monkeypatch):
    """No fork per execution: every execution of a point that names the stored body is checked by
    the one reused process (the check reports its pid), with the answers a fork per execution
    gives (CRASHCHECK_RUNNER_REUSE=0), read log and classes included."""
    monkeypatch.setattr(Runner, "lazy_body_supported", property(lambda self: True))
    runs = {}
    for reuse in (True, False):
        with _runner(lazyread, reuse) as r:
            assert r.hello["reuse"] is reuse
            runs[reuse] = [(o.point.index, o.decisions, o.covers, o.result.status, o.result.result, o.result.lazy)
                           for o in explore(_trace(3), strategy="lazy", runner=r, cache=False,
                                            executions=1 << 10, followup="6p")]
    grouped = [x for x in runs[True] if x[1] is not None and x[2] > 1]     # executions with groups
    assert len(grouped) > 10
    assert len({x[4]["pid"] for x in grouped}) == 1
    forked = [x for x in runs[False] if x[1] is not None and x[2] > 1]
    assert len({x[4]["pid"] for x in forked}) == len(forked)
    strip = [[x[:4] + ({k: v for k, v in x[4].items() if k != "pid"},) + x[5:] for x in runs[k]] for k in (True, False)]
    assert strip[0] == strip[1]


def _spec_naming_body(ls: int, decisions: list[int]) -> bytes:
    return struct.pack("<III", ls, STORED_BODY, len(decisions)) + struct.pack(f"<{len(decisions)}H", *decisions)


def test_naming_a_body_that_is_not_stored_is_refused_and_the_runner_goes_on(lazyread):
    with _runner(lazyread) as r:
        r.queue_lazy(r.next_state, _spec_naming_body(64, []), "1")
        with pytest.raises(RunnerError, match="names the stored body, but none is stored"):
            r.flush()
    with _runner(lazyread) as r:
        r.queue_lazy_body(b"\x40\x00\x00\x00")                       # shorter than its header
        with pytest.raises(RunnerError, match="lazy body shorter than its header"):
            r.flush()
    with _runner(lazyread) as r:
        # one group of one line at an offset outside the pool: refused, and nothing is stored
        bad = struct.pack("<IIII", 64, 1, 1, 1) + struct.pack("<Q", POOL) + bytes(64)
        r.queue_lazy_body(bad)
        with pytest.raises(RunnerError, match="outside the pool"):
            r.flush()
    with _runner(lazyread) as r:
        good = struct.pack("<IIII", 64, 1, 1, 2) + struct.pack("<Q", 0) + bytes(64) + b"\x08" + bytes(63)
        r.queue_lazy_body(good)
        r.queue_lazy(r.next_state, _spec_naming_body(32, []), "1")
        with pytest.raises(RunnerError, match="line size differs from the stored body"):
            r.flush()
    with _runner(lazyread) as r:
        r.queue_lazy_body(good)
        sid = r.next_state
        r.queue_lazy(sid, _spec_naming_body(64, [1]), "1")
        [(got, res)] = r.flush()
        # decision 1 at the first read of word 0: the variant whose word 0 is 8
        assert got == sid and res.status == "ok" and res.result["read"][0] == 8
        assert res.lazy["branches"] == [2]


def test_a_restarted_runner_gets_the_last_stored_body_again():
    # the requests a new runner replays to stand where the dead one stood: base, patches, the
    # last body (the executions queued after it name it)
    from types import SimpleNamespace
    from crashcheck.crashsim.runner_client import REQ, REQ_BASE, REQ_PATCH
    base, patch = REQ.pack(REQ_BASE, 1, 0) + b"/", REQ.pack(REQ_PATCH, 0, 1)
    body1, body2 = REQ.pack(REQ_LAZY_BODY, 1, 2) + b"a", REQ.pack(REQ_LAZY_BODY, 1, 3) + b"b"
    replay = Runner._base_after(SimpleNamespace(_base_log=[], _base_kept={}), [base, body1, patch, body2],
                                [REQ_BASE, REQ_LAZY_BODY, REQ_PATCH, REQ_LAZY_BODY])
    assert replay == ([base, patch], {REQ_LAZY_BODY: body2})


def test_the_base_log_of_a_runner_is_not_changed_by_a_shorter_replay():
    # flush() asks for the base after the answered prefix of an exchange (to restart a dead
    # runner), then after the whole exchange: both start from the same current base
    from types import SimpleNamespace
    from crashcheck.crashsim.runner_client import REQ, REQ_FOLLOWUP, REQ_LIMIT, REQ_PATCH
    p1, p2 = REQ.pack(REQ_PATCH, 0, 1), REQ.pack(REQ_PATCH, 0, 4)
    fu1, fu2 = REQ.pack(REQ_FOLLOWUP, 1, 2) + b"a", REQ.pack(REQ_FOLLOWUP, 1, 5) + b"b"
    limit = REQ.pack(REQ_LIMIT, 0, 3)
    cur = SimpleNamespace(_base_log=[b"base"], _base_kept={REQ_FOLLOWUP: b"fu0"})
    reqs, kinds = [p1, fu1, limit, p2, fu2], [REQ_PATCH, REQ_FOLLOWUP, REQ_LIMIT, REQ_PATCH, REQ_FOLLOWUP]
    assert Runner._base_after(cur, reqs[:2], kinds[:2]) == ([b"base", p1], {REQ_FOLLOWUP: fu1})
    assert Runner._base_after(cur, reqs, kinds) == ([b"base", p1, p2], {REQ_FOLLOWUP: fu2, REQ_LIMIT: limit})
    assert cur._base_log == [b"base"] and cur._base_kept == {REQ_FOLLOWUP: b"fu0"}

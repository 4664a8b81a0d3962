"""What lazy exploration spends at crash points it cannot cover completely.

A point whose search cannot finish within the cap ends partial and gets the bounded sample, so
every execution the search spends past the moment that is certain is wasted; a point repeating
an earlier one's search (same image, plan and followup) reuses it, complete or not; a point whose
pending lines include those of an earlier partial point gets only a probe. On code that never
flushes (Heart under x86-ADR) lazy then runs about twice bounded's executions on two short
histories, counted exactly (before: more than eight times).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from crashcheck.crashsim import Runner, read_trace
from crashcheck.crashsim.explore import explore
from crashcheck.crashsim.persistency import ModelOptions
from crashcheck.crashsim.simulate import Simulator
from crashcheck.crashsim.trace_writer import TraceWriter
from treeutil import ROOT

HERE = Path(__file__).resolve().parents[1]      # tests/
POOL = 256


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    sys.path.insert(0, str(HERE / "runner_fixtures"))
    from build_fixture import build as build_fixture
    lazyread = build_fixture("lazyread", tmp_path_factory.mktemp("lazy"), instrumented=True)
    base = TraceWriter(pool_size=POOL).pool_base
    env = dict(os.environ, CRASHCHECK_POOL_ADDR=f"{base:x}")
    with Runner([str(lazyread), "serve", str(POOL)], pool_base=base, pool_size=POOL, env=env) as r:
        yield r


def word0_six_stores() -> Simulator:
    """Word 0 written 6 times (values 8..48) and never flushed, then a fence: two crash points
    (before the fence, at the end) with the same 7 legal states, which a checker that reads
    word 0 (followup "1") tells all apart."""
    w = TraceWriter(pool_size=POOL)
    for v in range(1, 7):
        w.store(0, (8 * v).to_bytes(8, "little"))
    w.fence("sfence")
    return Simulator(w.events(), w.image(), line_size=64, region_base=w.pool_base)


def by_point(outs):
    points: dict[int, list] = {}
    for o in outs:
        if o.point.legal > 1:
            points.setdefault(o.point.index, []).append(o)
    return points


def test_a_search_stops_once_it_cannot_finish_within_the_cap(runner):
    # limit 4: the first execution (word 0 = 0) opens 6 siblings, so the 7 classes cannot run in
    # 4 executions: the search stops after that one (main ran 4), and the point gets the bounded
    # sample (0, 6, 1 and 2 stores kept) less that class, each state checked on its own.
    stats = []
    outs = list(explore(word0_six_stores(), strategy="lazy", runner=runner, followup="1", limit=4,
                        progress=stats.append, cache=False))
    point = by_point(outs)[0]
    searched = [o for o in point if o.leaf.branches]
    assert [o.leaf.branches for o in searched] == [(7,)]
    assert sorted(o.result.result["read"][0] for o in point) == [0, 8, 16, 48]
    assert all(o.covers == 1 for o in point)
    p = stats[-1]
    assert (p.partial, p.covered) == (2, sum(o.covers for o in outs))   # and the end's point


def test_a_repeated_partial_point_reuses_its_search(runner):
    # the point at the end has the same image and pending lines as the one before the fence: it
    # reuses that one's (partial) search and its sample's images, without any run.
    outs = list(explore(word0_six_stores(), strategy="lazy", runner=runner, followup="1",
                        limit=4))
    first, second = by_point(outs).values()
    assert any(o.cached_from is None for o in first)
    assert all(o.cached_from is not None for o in second), [(o.choice, o.cached_from) for o in second]
    assert sum(o.covers for o in second) == sum(o.covers for o in first) == 4     # of 7: partial


def test_partial_shapes_predict_points_that_include_their_pending_lines():
    from crashcheck.crashsim.lazy import PROBE, PartialShapes
    shapes = PartialShapes()
    assert not shapes.predicts(frozenset({1, 2}))
    shapes.add(frozenset({1, 2}))
    assert shapes.predicts(frozenset({1, 2})) and shapes.predicts(frozenset({1, 2, 7}))
    assert not shapes.predicts(frozenset({1})) and not shapes.predicts(frozenset({2, 3}))
    shapes.add(frozenset({1, 2, 3}))              # implied by {1, 2}: not kept twice
    assert list(shapes.shapes) == [frozenset({1, 2})]
    assert PROBE >= 1                             # a point of one class still finishes


POOL_SIZE = 512 << 10
HISTORIES = [["insert 4096 1", "insert 4097 2", "insert 4352 3", "update 4097 20", "delete 4352"],
             ["insert 17 5", "insert 9000 6", "insert 18 7", "delete 17", "insert 70000 8"]]


def test_lazy_executions_stay_near_bounded_where_nothing_is_flushed(tmp_path):
    # Heart never flushes: under x86-ADR every line it wrote stays pending, most points are too
    # big to cover, and lazy ran its whole cap at each before the bounded sample (5x bounded's
    # executions on these histories). Counted exactly: the runner's executions, not time.
    driver = ROOT / "build" / "trees" / "heart" / "driver"
    env = {k: v for k, v in os.environ.items() if k != "CRASHCHECK_TRACE"}
    opts = ModelOptions(model="adr")
    runs = {"lazy": 0, "bounded": 0}
    partial = 0
    with Runner([str(driver), "serve", "--size", str(POOL_SIZE)], env=env) as runner:
        for history in HISTORIES:
            (tmp_path / "pool").unlink(missing_ok=True)
            ran = subprocess.run([str(driver), "run", "--pool", str(tmp_path / "pool"), "--create", "--size",
                                  str(POOL_SIZE)], input="".join(x + "\n" for x in history),
                                 capture_output=True, text=True, timeout=60,
                                 env=dict(env, CRASHCHECK_TRACE=str(tmp_path / "trace")))
            assert ran.returncode == 0, ran.stderr
            trace = read_trace(tmp_path / "trace")
            first = next(i for i, ev in enumerate(trace.events) if ev.kind == "op_begin")
            follow = "".join(f"lookup {line.split()[1]}\n" for line in history)
            for strategy in runs:
                stats = []
                for _ in explore(trace, options=opts, strategy=strategy, runner=runner, followup=follow,
                                 start_event=first, seed=1, progress=stats.append):
                    pass
                runs[strategy] += stats[-1].executions if strategy == "lazy" else stats[-1].checked
                if strategy == "lazy":
                    partial += stats[-1].partial
    assert partial > 0          # the case this is about: points lazy cannot cover
    # measured: lazy 723, bounded 352 (main: lazy 3029). On histories this short the first
    # partial point of each still runs a full search; over a fuzz run's many histories lazy ran
    # fewer executions than bounded (bench/lazy/run, bench/README.md).
    assert runs["lazy"] <= 2.5 * runs["bounded"], runs

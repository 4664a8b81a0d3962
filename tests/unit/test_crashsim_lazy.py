"""Lazy exploration against exhaustive exploration, state by state.

Random small traces (tests/unit/test_crashsim_property.py's generator: several lines, up to three
threads, flushes and fences of every kind, NT stores, both models) are explored twice with a
checker whose reads depend on what it read before (tests/runner_fixtures/lazyread.c: a chain of
words, memcmp, strlen, a store read back, an atomic add): once exhaustively, every legal state
checked on its own, and once lazily. At every crash point the lazy classes must partition the
legal states exactly (disjoint, their union the whole set, their sizes the covered count) and
every member of a class must have got, checked on its own, the same result as its class.
"""
from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from crashcheck.crashsim.explore import explore
from crashcheck.crashsim.lazy import LazyPlan, children, decode
from crashcheck.crashsim.persistency import ModelOptions
from crashcheck.crashsim.runner_client import Runner, RunnerError
from crashcheck.crashsim.simulate import Simulator
from crashcheck.crashsim.states import bounded, exhaustive
from crashcheck.crashsim.trace_writer import TraceWriter
from crashcheck.harness.check.findings import Coverage

from test_crashsim_property import action, build, options, total_pieces

HERE = Path(__file__).resolve().parents[1]      # tests/
POOL = 256


@pytest.fixture(scope="module")
def lazyread(tmp_path_factory):
    import sys
    sys.path.insert(0, str(HERE / "runner_fixtures"))
    from build_fixture import build as build_fixture
    return build_fixture("lazyread", tmp_path_factory.mktemp("lazy"), instrumented=True)


@pytest.fixture(scope="module")
def runner(lazyread):
    base = TraceWriter(pool_size=POOL).pool_base
    env = dict(os.environ, CRASHCHECK_POOL_ADDR=f"{base:x}")
    with Runner([str(lazyread), "serve", str(POOL)], pool_base=base, pool_size=POOL, env=env) as r:
        yield r


def results_by_point(events, image, opts, runner, strategy):
    sim = Simulator(events, image, line_size=64, region_base=TraceWriter(pool_size=POOL).pool_base,
                    options=opts)
    out = {}
    # executions: room for every class of these small points (the default cap is the state limit)
    for o in explore(sim, strategy=strategy, runner=runner, cache=False, executions=1 << 12):
        assert o.result.status == "ok", o.result
        out.setdefault(o.point.index, []).append(o)
    return out


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions=st.lists(action, min_size=1, max_size=14), opts=options,
       initial=st.binary(min_size=POOL, max_size=POOL))
# a memset over an NT store over two plain ones: the plain pieces are cut whole by the durable NT
# piece (an empty mask), which a plan must not write back (found by CI on 2026-11-27)
@example(actions=[("store", 0, 0, 1, bytes(16)), ("store", 0, 0, 1, b"\x01" + bytes(15)),
                  ("ntstore", 0, 0, 8, bytes(16)), ("copy", 0, 0, 16, bytes(40), "memset"),
                  ("fence", 0, "sfence")],
         opts=ModelOptions(model="adr", clflush_guarantees=False, line_size=32, atomic_unit=4),
         initial=bytes(POOL))
def test_lazy_classes_partition_states_and_agree_with_exhaustive(runner, actions, opts, initial):
    w = build(actions, initial)
    assume(total_pieces(w, opts.atomic_unit) <= 8)
    eager = results_by_point(w.events(), w.image(), opts, runner, "exhaustive")
    lazy = results_by_point(w.events(), w.image(), opts, runner, "lazy")
    assert eager.keys() == lazy.keys()
    for index, states in eager.items():
        by_choice = {tuple(o.choice): o.result.result for o in states}
        legal = states[0].point.legal
        assert len(by_choice) == legal
        seen: set[tuple[int, ...]] = set()
        covered = 0
        for o in lazy[index]:
            members = set(o.leaf.members())
            assert len(members) == o.covers
            assert not members & seen, "two lazy classes overlap"
            seen |= members
            covered += o.covers
            assert tuple(o.choice) in members
            for m in members:
                assert by_choice[m] == o.result.result, (
                    f"crash point {index}: state {m} checked alone gives {by_choice[m]}, its lazy "
                    f"class {o.decisions} gave {o.result.result}")
        assert seen == set(by_choice) and covered == legal


def three_lines_two_stores_each():
    """One crash point of 27 legal states: three lines with two pending stores each (word 0's
    holds 0, 8 or 16); a checker that reads only word 0 (followup "1") tells 3 classes apart."""
    w = TraceWriter(pool_size=POOL)
    for line in (0, 64, 128):
        w.store(line, (8).to_bytes(8, "little"))
        w.store(line, (16).to_bytes(8, "little"))
        w.flush(line, "clwb")
    w.fence("sfence")
    return Simulator(w.events(), w.image(), line_size=64, region_base=w.pool_base)


def test_lazy_takes_fewer_executions_when_recovery_reads_less(runner):
    # Three lines each with two pending stores; the checker reads only word 0 (steps 1), so the
    # other lines' states are one class: 3 executions (word 0's three prefixes), not 27.
    sim = three_lines_two_stores_each()
    outs = [o for o in explore(sim, strategy="lazy", runner=runner, followup="1") if o.point.legal > 1]
    assert {o.point.legal for o in outs} == {27}
    assert len(outs) == 3 and sum(o.covers for o in outs) == 27
    assert sorted(o.result.result["read"][0] for o in outs) == [0, 8, 16]


def test_a_point_past_the_execution_cap_is_partial_and_gets_the_bounded_remainder(runner):
    # limit 2: the first execution (word 0 = 0, 9 states) opens 2 siblings, so the 3 classes
    # cannot all run within 2 executions: the search stops there (one more execution would not
    # make the point complete), the point is partial and gets bounded's sample (limit 2, seed 5:
    # its 8 boundary states) less the states that class holds: the 4 with word 0 = 16, each
    # checked on its own.
    stats = []
    sim = three_lines_two_stores_each()
    outs = [o for o in explore(sim, strategy="lazy", runner=runner, followup="1", limit=2, seed=5,
                               progress=stats.append) if o.point.legal > 1]
    cp = outs[0].point
    assert [o.covers for o in outs[:1]] == [9] and [o.decisions for o in outs[:1]] == [()]
    sample = bounded(cp.radices, 2, random.Random(f"5:{cp.index}"))
    assert len(sample) == 8
    rest = outs[1:]
    assert [tuple(o.choice) for o in rest] == [c for c in sample if c[0] != 0]
    assert len(rest) == 4
    assert all(o.covers == 1 and o.decisions == () and o.leaf.covers == 1 for o in rest)
    assert [o.result.result["read"][0] for o in outs] == [0, 16, 16, 16, 16]
    # the covered count is exact: the class and the extra states are disjoint, 9 + 4 states
    members: set[tuple[int, ...]] = set()
    for o in outs:
        ms = set(o.leaf.members())
        assert not ms & members
        members |= ms
    assert len(members) == sum(o.covers for o in outs) == 13 < cp.legal == 27
    coverage = Coverage()
    for o in outs:
        coverage.count(o)
    coverage.close()
    assert coverage.of_point(cp.index) == (27, 13) and coverage.points_sampled == 1
    # and so is the run's progress (the trace's other crash point has 1 legal state)
    p = stats[-1]
    assert (p.legal, p.covered, p.complete, p.partial) == (28, 14, 1, 1)


def test_a_point_within_the_execution_cap_is_complete(runner):
    stats = []
    outs = [o for o in explore(three_lines_two_stores_each(), strategy="lazy", runner=runner, followup="1",
                               limit=3, progress=stats.append) if o.point.legal > 1]
    assert [o.covers for o in outs] == [9, 9, 9]
    assert (stats[-1].covered, stats[-1].partial) == (28, 0)


def test_a_class_contains_exactly_its_members(runner):
    sim = three_lines_two_stores_each()
    outs = [o for o in explore(sim, strategy="lazy", runner=runner, followup="2", cache=False)
            if o.point.legal > 1]
    cp = outs[0].point
    for o in outs:
        ms = set(o.leaf.members())
        assert {c for c in exhaustive(cp.radices) if o.leaf.contains(c)} == ms
    unknown = outs[0].leaf.__class__((), (), [None] * len(outs[0].leaf.groups), 0, outs[0].choice,
                                     outs[0].leaf.groups, len(cp.units))
    assert not any(unknown.contains(c) for c in exhaustive(cp.radices))


def test_children_open_each_sibling_once():
    assert children((), [2, 3]) == [(1,), (0, 1), (0, 2)]
    assert children((0, 2), [2, 3, 2]) == [(0, 2, 1)]
    assert children((1,), [2]) == []


def test_spec_round_trips():
    w = TraceWriter(pool_size=POOL)
    w.store(8, b"\x01" * 8)
    w.store(72, b"\x02" * 8)
    w.fence("sfence")
    sim = Simulator(w.events(), w.image(), line_size=64, region_base=w.pool_base)
    cp = next(c for c in sim.crash_points() if c.legal > 1)
    plan = LazyPlan(cp, sim.image)
    decisions, groups = decode(plan.spec([1, 0]))
    assert decisions == [1, 0]
    assert [offs for offs, _ in groups] == [[0], [64]]
    for offs, variants in groups:
        # variant 0 keeps nothing, variant 1 the store
        assert variants[0] == bytes(64)
        assert variants[1][offs[0] % 64 + 8:offs[0] % 64 + 16] == bytes([1 if offs[0] == 0 else 2]) * 8


def test_lazy_needs_a_driver_with_check_loads(tmp_path):
    import sys
    sys.path.insert(0, str(HERE / "runner_fixtures"))
    from build_fixture import build as build_fixture
    plain = build_fixture("misbehave", tmp_path)       # compiled without the pass
    with Runner([str(plain), "serve", "4096"], pool_size=4096) as r:
        assert r.hello["lazy"] is False
        w = TraceWriter(pool_base=r.pool_base, pool_size=4096)
        w.store(0, b"\x01" * 8)
        w.fence("sfence")
        sim = Simulator(w.events(), w.image(), line_size=64, region_base=w.pool_base)
        with pytest.raises(Exception, match="check loads"):
            list(explore(sim, strategy="lazy", runner=r))
        with pytest.raises(RunnerError, match="check loads"):
            r.queue_lazy(r.next_state, b"", "")

"""The pipeline end to end: trace -> crash points -> states -> runner -> results (crashsim/explore.py).

The runner is tests/runner_fixtures/misbehave.c, whose CHECK reports the sum of pool words 1..15
and echoes the followup. Every state's reported sum must equal the sum over the image the
reference enumerator (crashsim/reference.py) computes for the same kept pieces: that checks base
loading, base patches, state writes and the image cache together.
"""
from __future__ import annotations

import os
import struct

import pytest

from crashcheck.crashsim.explore import explore
from crashcheck.crashsim.persistency import ModelOptions
from crashcheck.crashsim.reference import reference
from crashcheck.crashsim.runner_client import Runner
from crashcheck.crashsim.simulate import Simulator
from crashcheck.crashsim.trace import read_trace
from crashcheck.crashsim.trace_writer import TraceWriter
from runner_fixtures import build_fixture


SIZE = 1 << 16


def u64(v: int) -> bytes:
    return v.to_bytes(8, "little")


def words_sum(image: bytes) -> int:
    return sum(struct.unpack_from("<15Q", image, 8)) % (1 << 64)


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    prog = build_fixture.build("misbehave", tmp_path_factory.mktemp("fixtures"))
    env = {k: v for k, v in os.environ.items() if k not in ("CRASHCHECK_TRACE", "CRASHCHECK_POOL_ADDR")}
    r = Runner([str(prog), "serve", str(SIZE)], env=env)
    yield r
    r.close()


def history(initial: bytes | None = None) -> TraceWriter:
    """Three operations on words 1..15 (lines 0 and 64): a persisted update, one that forgets
    its fence, and a wide NT store plus an unflushed cached store."""
    w = TraceWriter(pool_size=SIZE, image=initial)
    w.op_begin(0)
    w.store(8, u64(1))
    w.store(16, u64(2))
    w.store(64, u64(100) + u64(200))
    w.persist(8, 16)
    w.persist(64, 16)
    w.op_end(0)
    w.op_begin(1)
    w.store(24, u64(3))
    w.store(8, u64(10))
    w.flush(8)
    w.op_end(1)
    w.op_begin(2)
    w.ntstore(80, u64(7) + u64(8))
    w.store(32, u64(4))
    w.fence()
    w.store(88, u64(9))
    w.op_end(2)
    return w


def check_against_reference(outcomes, w: TraceWriter, initial: bytes, opts: ModelOptions):
    points, pieces = reference(w.events(), opts)
    by_event = {rp.event: rp for rp in points}
    for out in outcomes:
        rp = by_event[out.point.event]
        kept = frozenset(p.key for p in out.kept)
        assert kept in rp.states
        assert out.result.ok, out.result
        assert out.result.result["sum"] == words_sum(rp.image(initial, pieces, kept)), (out.point.event, kept)


@pytest.mark.parametrize("model", ["adr", "eadr"])
@pytest.mark.parametrize("strategy", ["exhaustive", "bounded"])
def test_results_match_reference_images(runner, tmp_path, model, strategy):
    w = history()
    path = w.write(tmp_path / "h.trace")
    opts = ModelOptions(model=model)
    seen_progress = []
    outcomes = list(explore(path, options=opts, strategy=strategy, limit=3, seed=5, runner=runner,
                            followup=lambda cp: f"op={cp.op}", progress=seen_progress.append, batch=7))
    check_against_reference(outcomes, w, w.image(), opts)
    for out in outcomes:
        assert out.result.result["followup"] == f"op={out.point.op}"
        if out.cached_from is not None:
            assert out.result is next(o.result for o in outcomes if o.id == out.cached_from)
    final = seen_progress[-1]
    assert final.points_done == final.points_total == len({o.point.index for o in outcomes})
    assert final.explored == len(outcomes) == final.checked + final.cached
    assert final.cached == sum(o.cached_from is not None for o in outcomes) > 0
    if strategy == "exhaustive":
        assert final.legal == final.explored


def test_in_memory_events_with_a_non_zero_initial_image(runner):
    initial = bytearray(SIZE)
    struct.pack_into("<15Q", initial, 8, *range(1000, 1015))
    initial[SIZE - 8:] = b"\xff" * 8
    w = history(bytes(initial))
    sim = Simulator(w.events(), w.image(), region_base=w.pool_base)
    outcomes = list(explore(sim, strategy="exhaustive", runner=runner))
    check_against_reference(outcomes, w, bytes(initial), ModelOptions())


def test_without_cache_every_state_is_checked(runner, tmp_path):
    path = history().write(tmp_path / "h.trace")
    before = runner.stats.states
    outcomes = list(explore(path, strategy="exhaustive", runner=runner, cache=False))
    assert all(o.cached_from is None for o in outcomes)
    assert runner.stats.states - before == len(outcomes)


def test_ids_continue_across_explorations(runner, tmp_path):
    path = history().write(tmp_path / "h.trace")
    first = [o.id for o in explore(path, runner=runner)]
    second = [o.id for o in explore(path, runner=runner)]
    assert second[0] > first[-1] and second == sorted(second)


def test_without_runner_states_stream_with_no_results(tmp_path):
    path = history().write(tmp_path / "h.trace")
    outcomes = list(explore(read_trace(path), strategy="bounded", limit=2))
    assert outcomes and all(o.result is None for o in outcomes)
    lost_and_kept = [(len(o.kept), len(o.lost)) for o in outcomes]
    assert all(k + l == o.point.pending_pieces for (k, l), o in zip(lost_and_kept, outcomes))


def test_pool_mismatch(runner, tmp_path):
    w = TraceWriter(pool_size=4096)
    path = w.write(tmp_path / "small.trace")
    from crashcheck.crashsim.trace import TraceError
    with pytest.raises(TraceError, match="does not match the runner"):
        explore(path, runner=runner)

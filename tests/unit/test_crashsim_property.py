"""Property tests: the fast simulator against the brute-force reference (crashsim/reference.py).

Random small traces (several lines, up to three threads, every flush and fence kind, NT stores,
wide and unaligned stores, memsets and copies whose pieces in a line persist in any order,
operation markers) under both models and their options. For every
crash point the fast enumerator must give exactly the reference's set of states, the same
images, and fingerprints that are equal exactly when images are equal. The bounded strategy
must pick legal states only, always include the boundary states, and be deterministic.
"""
from __future__ import annotations

import random

import pytest

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from crashcheck.crashsim.explore import explore
from crashcheck.crashsim.image import apply_writes, decode_writes
from crashcheck.crashsim.persistency import ModelOptions, split_points
from crashcheck.crashsim.reference import reference
from crashcheck.crashsim.simulate import Simulator
from crashcheck.crashsim.states import StateCodec, boundary, bounded, exhaustive, legal_count
from crashcheck.crashsim.trace_writer import TraceWriter

POOL = 256
MAX_PIECES = 11

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

store_sizes = st.sampled_from([1, 2, 3, 4, 8, 8, 8, 12, 16])
# Half the stores go to a few hot spots, so cached and NT stores often hit the same bytes (the
# out-of-order durability that image masking handles) and lines collect several pieces.
store_offsets = st.one_of(st.integers(0, POOL - 16), st.sampled_from([0, 4, 8, 64, 72, 100]))
nt_slots = st.one_of(st.integers(0, POOL // 8 - 2), st.sampled_from([0, 1, 8, 9]))
action = st.one_of(
    st.tuples(st.just("store"), st.integers(0, 2), store_offsets, store_sizes, st.binary(min_size=16, max_size=16)),
    st.tuples(st.just("ntstore"), st.integers(0, 2), nt_slots, st.sampled_from([8, 16]),
              st.binary(min_size=16, max_size=16)),
    st.tuples(st.just("flush"), st.integers(0, 2), st.integers(0, POOL // 32 - 1),
              st.sampled_from(["clflush", "clflushopt", "clwb"])),
    st.tuples(st.just("fence"), st.integers(0, 2), st.sampled_from(["sfence", "mfence", "locked", "seq_cst"])),
    st.tuples(st.just("op"), st.integers(0, 2)),
    st.tuples(st.just("copy"), st.integers(0, 2), st.one_of(st.integers(0, POOL - 40), st.sampled_from([0, 8, 64, 100])),
              st.sampled_from([16, 24, 40]),
              st.binary(min_size=40, max_size=40),
              st.sampled_from(["memset", "memcpy", "memmove", "libpmem", "library"])),
)
options = st.builds(ModelOptions, model=st.sampled_from(["adr", "eadr", "pmreorder"]), clflush_guarantees=st.booleans(),
                    line_size=st.sampled_from([32, 64]), atomic_unit=st.sampled_from([4, 8, 8, 16]))


def build(actions, initial: bytes) -> TraceWriter:
    w = TraceWriter(pool_size=POOL, line_size=64, image=initial)
    op, open_op = 0, {}          # thread -> its operation in flight
    for a in actions:
        if a[0] == "store":
            _, tid, off, size, data = a
            w.store(off, data[:size], tid=tid)
        elif a[0] == "copy":
            _, tid, off, size, data, origin = a
            w.store(off, data[:size], tid=tid, origin=origin)
        elif a[0] == "ntstore":
            _, tid, slot, size, data = a
            w.ntstore(slot * 8, data[:size], tid=tid)
        elif a[0] == "flush":
            _, tid, line, kind = a
            w.flush(line * 32, kind, tid=tid)
        elif a[0] == "fence":
            _, tid, kind = a
            w.fence(kind, tid=tid)
        elif a[1] not in open_op:
            w.op_begin(op, tid=a[1])
            open_op[a[1]], op = op, op + 1
        else:
            w.op_end(open_op.pop(a[1]), tid=a[1])
    return w


def total_pieces(w: TraceWriter, unit: int) -> int:
    return sum(len(split_points(e.addr, e.size, unit)) for e in w.events() if e.kind in ("store", "ntstore"))


@SETTINGS
@given(actions=st.lists(action, min_size=1, max_size=14), opts=options,
       initial=st.binary(min_size=POOL, max_size=POOL))
def test_fast_enumerator_equals_reference(actions, opts, initial):
    w = build(actions, initial)
    assume(total_pieces(w, opts.atomic_unit) <= MAX_PIECES)
    events = w.events()
    ref_points, pieces = reference(events, opts, line_size=64)
    counted = Simulator(events, initial, line_size=64, region_base=w.pool_base, options=opts)
    assert sum(1 for _ in counted.crash_points()) == len(ref_points) == counted.count_crash_points()
    fps: dict[int, bytes] = {}
    sim = Simulator(events, initial, line_size=64, region_base=w.pool_base, options=opts)
    for cp, rp in zip(sim.crash_points(), ref_points):
        assert (cp.event, cp.kind, cp.op) == (rp.event, rp.kind, rp.op)
        codec = StateCodec(cp, sim.image)
        states = set()
        for choice in exhaustive(cp.radices):
            kept = frozenset(p.key for p in cp.kept(choice))
            states.add(kept)
            fp, blob = codec.encode(choice)
            image = bytes(apply_writes(bytearray(sim.image.base), decode_writes(blob)))
            assert image == rp.image(initial, pieces, kept), (cp.event, sorted(kept))
            # fingerprints: equal exactly when the images are equal
            assert fps.setdefault(fp, image) == image
        assert cp.legal == len(rp.states)
        assert states == rp.states


def on_threads(actions, threads: int) -> list:
    """ACTIONS spread over THREADS threads (each action's thread taken modulo THREADS), after one
    store per thread so that every thread has stored."""
    first = [("store", t, 8 * t, 8, bytes([t + 1]) * 16) for t in range(threads)]
    return first + [(a[0], a[1] % threads) + a[2:] if len(a) > 1 else a for a in actions]


@pytest.mark.parametrize("threads", [2, 3])
@settings(SETTINGS, max_examples=100)
@given(actions=st.lists(action, min_size=1, max_size=12), opts=options)
def test_multi_thread_counts_equal_reference(threads, actions, opts):
    """Per-thread rules: an ADR flush is guaranteed by the flushing thread's own later fence,
    and under eADR each thread's pieces since its last drain persist as a prefix of their own."""
    w = build(on_threads(actions, threads), bytes(POOL))
    assume(total_pieces(w, opts.atomic_unit) <= MAX_PIECES)
    events = w.events()
    assert len({e.tid for e in events if e.kind == "store"}) == threads
    ref_points, _ = reference(events, opts, line_size=64)
    sim = Simulator(events, w.image(), line_size=64, region_base=w.pool_base, options=opts)
    got = [(cp.event, cp.kind, cp.legal) for cp in sim.crash_points()]
    assert got == [(rp.event, rp.kind, len(rp.states)) for rp in ref_points]


def test_eadr_threads_drain_independently():
    """Two threads' unfenced stores under eADR: each persists as its own prefix (3 x 2 states),
    where a global prefix of the trace order would allow only 4; a fence by thread 1 makes
    thread 1's pieces durable and leaves thread 2's pending."""
    w = TraceWriter(pool_size=POOL, line_size=64, image=bytes(POOL))
    w.store(0, b"\x01" * 8, tid=1)
    w.store(64, b"\x02" * 8, tid=2)
    w.store(8, b"\x03" * 8, tid=1)
    w.fence("sfence", tid=1)
    w.fence("sfence", tid=2)
    sim = Simulator(w.events(), w.image(), line_size=64, region_base=w.pool_base,
                    options=ModelOptions(model="eadr"))
    points = list(sim.crash_points())
    assert [(cp.kind, cp.legal, [len(u.pieces) for u in cp.units]) for cp in points] == [
        ("fence", 6, [2, 1]), ("fence", 2, [1]), ("end", 1, [])]


@SETTINGS
@given(actions=st.lists(action, min_size=1, max_size=14), opts=options,
       limit=st.integers(1, 12), seed=st.integers(0, 3))
def test_bounded_picks_legal_states_and_the_boundary(actions, opts, limit, seed):
    w = build(actions, bytes(POOL))
    assume(total_pieces(w, opts.atomic_unit) <= MAX_PIECES)
    sim = Simulator(w.events(), w.image(), line_size=64, region_base=w.pool_base, options=opts)
    for cp in sim.crash_points():
        radices = cp.radices
        legal = set(exhaustive(radices))
        picked = bounded(radices, limit, random.Random(f"{seed}:{cp.index}"))
        assert len(picked) == len(set(picked))
        assert set(picked) <= legal
        if len(legal) <= limit:
            assert set(picked) == legal
        else:
            edge = boundary(radices)
            assert set(edge) <= set(picked)
            assert len(picked) == max(len(edge), limit)
        assert picked == bounded(radices, limit, random.Random(f"{seed}:{cp.index}"))


@SETTINGS
@given(actions=st.lists(action, min_size=1, max_size=14), opts=options,
       strategy=st.sampled_from(["exhaustive", "bounded"]))
def test_explore_cache_only_reuses_identical_images(actions, opts, strategy):
    w = build(actions, bytes(POOL))
    assume(total_pieces(w, opts.atomic_unit) <= MAX_PIECES)
    sim = Simulator(w.events(), w.image(), line_size=64, region_base=w.pool_base, options=opts)
    ref_points, pieces = reference(w.events(), opts, line_size=64)
    by_event = {rp.event: rp for rp in ref_points}
    images: dict[int, bytes] = {}
    checked: dict[bytes, int] = {}      # image -> the state that would be sent to a runner
    ids = []
    for out in explore(sim, strategy=strategy, limit=4, seed=1):
        rp = by_event[out.point.event]
        image = rp.image(w.image(), pieces, frozenset(p.key for p in out.kept))
        images[out.id] = image
        ids.append(out.id)
        if out.cached_from is not None:
            assert out.cached_from < out.id and images[out.cached_from] == image
        else:
            # a repeated image that was not answered from the cache would be a miss
            assert image not in checked
            checked[image] = out.id
    assert ids == list(range(len(ids)))


def test_legal_count_matches_enumeration():
    for radices in ([], [0], [3], [1, 2], [2, 0, 3]):
        assert legal_count(radices) == len(list(exhaustive(radices)))


@pytest.mark.parametrize("model", ["adr", "eadr"])
@pytest.mark.parametrize("unit, legal", [(8, 2 + (2 ** 5 - 2) + 2), (4, 3 + (2 ** 10 - 2) + 3), (2, 29)])
def test_memset_pieces_in_a_line_persist_in_any_order(model, unit, legal):
    """An 8-byte store, a 40-byte memset and an 8-byte store in one line, then a fence: the line
    holds a prefix up to the memset plus any subset of its pieces (2^5 with 8-byte units, 2^10
    with 4-byte ones; the empty and the full subset are the prefixes before and after it), or a
    prefix before or after it; with 2-byte units (20 memset pieces, over MAX_UNORDERED) address
    order: the 29 prefixes of 28 pieces."""
    w = TraceWriter(pool_size=POOL, line_size=64)
    w.store(0, b"\1" * 8)
    w.store(8, bytes(range(40)), origin="memset")
    w.store(48, b"\2" * 8)
    w.fence("sfence")
    opts = ModelOptions(model=model, atomic_unit=unit)
    sim = Simulator(w.events(), bytes(POOL), line_size=64, region_base=w.pool_base, options=opts)
    cp = next(sim.crash_points())
    assert cp.legal == legal and len(set(exhaustive(cp.radices))) == legal
    if unit == 8:
        ref, _ = reference(w.events(), opts, line_size=64)
        assert len(ref[0].states) == legal
        kept = {frozenset(p.key for p in cp.kept(c)) for c in exhaustive(cp.radices)}
        assert kept == ref[0].states
        assert frozenset({(0, 0), (1, 4)}) in kept          # the memset's last piece without its first
        assert frozenset({(1, 0)}) not in kept             # never without the store before it
        assert frozenset({(0, 0), (1, 0), (2, 0)}) not in kept   # nor the store after it without all

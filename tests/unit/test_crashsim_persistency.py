"""Persistency models on hand-written traces with known answers (crashsim/simulate.py, states.py).

Each test builds a tiny trace with crashcheck.crashsim.trace_writer and checks the crash points, the exact set
of legal states (as the pending pieces each state keeps) and, where it matters, the images.
"""
from __future__ import annotations

import pytest

from crashcheck.crashsim.image import apply_writes, decode_writes
from crashcheck.crashsim.persistency import ModelError, ModelOptions, split_points
from crashcheck.crashsim.simulate import Simulator
from crashcheck.crashsim.states import StateCodec, exhaustive
from crashcheck.crashsim.trace_writer import TraceWriter

W = 8


def u64(v: int) -> bytes:
    return v.to_bytes(8, "little")


def run(w: TraceWriter, **opts):
    """[(crash point, {frozenset of kept piece keys}, {kept -> region-0 image})] for every point."""
    sim = Simulator(w.events(), w.image(), line_size=w.line_size, region_base=w.pool_base,
                    options=ModelOptions(**opts))
    out = []
    for cp in sim.crash_points():
        codec = StateCodec(cp, sim.image)
        states, images = set(), {}
        for choice in exhaustive(cp.radices):
            kept = frozenset(p.key for p in cp.kept(choice))
            states.add(kept)
            _, blob = codec.encode(choice)
            images[kept] = bytes(apply_writes(bytearray(sim.image.base), decode_writes(blob)))
        assert len(states) == cp.legal
        out.append((cp, states, images))
    return out


def last(w: TraceWriter, **opts):
    return run(w, **opts)[-1]


def S(*keys) -> frozenset:
    return frozenset(keys)


def test_split_points():
    assert split_points(6, 3, 8) == [(6, 8), (8, 9)]          # crosses an 8-byte boundary
    assert split_points(0, 16, 8) == [(0, 8), (8, 16)]
    assert split_points(4, 2, 8) == [(4, 6)]
    assert split_points(60, 8, 8) == [(60, 64), (64, 68)]


def test_store_never_flushed_may_or_may_not_persist():
    w = TraceWriter()
    w.store(0, u64(1))
    cp, states, images = last(w)
    assert cp.kind == "end" and cp.legal == 2
    assert states == {S(), S((0, 0))}
    assert images[S()][:8] == bytes(8) and images[S((0, 0))][:8] == u64(1)


@pytest.mark.parametrize("flush", ["clflush", "clflushopt", "clwb"])
def test_flush_without_fence_guarantees_nothing(flush):
    w = TraceWriter()
    w.store(0, u64(1))
    w.flush(0, flush)
    assert last(w)[0].legal == 2
    w.fence()
    cp, states, images = last(w)
    assert cp.legal == 1 and states == {S()}
    assert images[S()][:8] == u64(1)                           # guaranteed: in the base


def test_clflush_option():
    w = TraceWriter()
    w.store(0, u64(1))
    w.flush(0, "clflush")
    off = run(w)
    assert [cp.kind for cp, _, _ in off] == ["end"] and off[-1][0].legal == 2
    on = run(w, clflush_guarantees=True)
    assert [cp.kind for cp, _, _ in on] == ["clflush", "end"]
    assert on[0][0].legal == 2                                 # just before the clflush: not yet
    assert on[1][0].legal == 1                                 # after it: guaranteed without a fence
    # clflushopt is not affected by the option
    w2 = TraceWriter()
    w2.store(0, u64(1))
    w2.flush(0, "clflushopt")
    assert last(w2, clflush_guarantees=True)[0].legal == 2


def test_two_stores_to_one_line_persist_in_order():
    w = TraceWriter()
    w.store(0, u64(1))
    w.store(8, u64(2))
    cp, states, _ = last(w)
    assert states == {S(), S((0, 0)), S((0, 0), (1, 0))}        # never the second without the first
    assert len(cp.units) == 1 and cp.pending_lines == [w.pool_base]


def test_stores_to_two_lines_are_independent():
    w = TraceWriter()
    w.store(0, u64(1))
    w.store(64, u64(2))
    _, states, _ = last(w)
    assert states == {S(), S((0, 0)), S((1, 0)), S((0, 0), (1, 0))}


def test_sixteen_byte_store_tears_at_eight():
    w = TraceWriter()
    w.store(16, b"A" * 8 + b"B" * 8)
    _, states, images = last(w)
    assert states == {S(), S((0, 0)), S((0, 0), (0, 1))}
    assert images[S((0, 0))][16:32] == b"A" * 8 + bytes(8)      # torn
    # a store that crosses a line is two independent pieces
    w2 = TraceWriter()
    w2.store(60, b"C" * 8)
    _, states2, _ = last(w2)
    assert len(states2) == 4


def test_atomic_unit_option():
    w = TraceWriter()
    w.store(0, b"A" * 16)
    assert last(w, atomic_unit=16)[0].legal == 2
    assert last(w, atomic_unit=4)[0].legal == 5
    with pytest.raises(ModelError, match="power of two"):
        run(w, atomic_unit=6)
    with pytest.raises(ModelError, match="larger than the line size"):
        run(w, atomic_unit=128)


def test_line_size_option():
    w = TraceWriter()
    w.store(0, u64(1))
    w.store(64, u64(2))
    assert last(w)[0].legal == 4                               # two 64-byte lines
    assert last(w, line_size=128)[0].legal == 3                # one 128-byte line: in order


def test_flush_covers_only_earlier_stores():
    w = TraceWriter()
    w.store(0, u64(1))
    w.flush(0)
    w.store(8, u64(2))
    w.fence()
    cp, states, _ = last(w)
    assert states == {S(), S((2, 0))}                          # the first is guaranteed, the second pending


def test_nt_store_and_fence():
    w = TraceWriter()
    w.ntstore(0, u64(5))
    _, states, images = last(w)
    assert states == {S(), S((0, 0))}
    w.flush(0)                                                 # a flush does not drain an NT store...
    w.fence(tid=1)                                             # ...nor does another thread's fence
    assert last(w)[0].legal == 2
    w.fence()                                                  # its own thread's fence does
    cp, states, images = last(w)
    assert cp.legal == 1 and images[S()][:8] == u64(5)


def test_nt_stores_are_not_in_the_line_order():
    w = TraceWriter()
    w.store(0, u64(1))
    w.ntstore(8, u64(2))
    w.store(16, u64(3))
    _, states, _ = last(w)
    # the cached pair keeps its order; the NT store is free
    assert len(states) == 3 * 2
    assert S((1, 0)) in states and S((2, 0)) not in states


def test_nt_store_overtaking_an_older_cached_store_of_the_same_bytes():
    w = TraceWriter()
    w.store(0, u64(1))        # cached, never flushed
    w.ntstore(0, u64(2))      # later, same bytes
    w.fence()                 # guarantees the NT store only
    cp, states, images = last(w)
    assert states == {S(), S((0, 0))}
    # the base holds the NT value, and keeping the older cached store must not overwrite it
    assert images[S()][:8] == u64(2) and images[S((0, 0))][:8] == u64(2)


def test_flush_by_another_thread_needs_that_thread_s_fence():
    w = TraceWriter()
    w.store(0, u64(1), tid=0)
    w.flush(0, tid=1)
    w.fence(tid=0)
    assert last(w)[0].legal == 2
    w.fence(tid=1)
    assert last(w)[0].legal == 1


def test_crash_points_and_operations():
    w = TraceWriter()
    w.op_begin(0)
    w.store(0, u64(1))
    w.persist(0, 8)
    w.op_end(0)
    w.op_begin(1)
    w.store(8, u64(2))
    w.fence("mfence")
    w.op_end(1)
    points = [cp for cp, _, _ in run(w)]
    assert [(cp.kind, cp.event, cp.op, cp.last_done) for cp in points] == [
        ("op_begin", 0, None, None), ("fence", 3, 0, None), ("op_end", 4, None, 0),
        ("op_begin", 5, None, 0), ("fence", 7, 1, 0), ("op_end", 8, None, 1), ("end", 9, None, 1)]
    assert [cp.legal for cp in points] == [1, 2, 1, 1, 2, 2, 2]


def test_every_fence_kind_is_a_crash_point():
    w = TraceWriter()
    for kind in ("sfence", "mfence", "locked", "seq_cst"):
        w.store(0, u64(1))
        w.flush(0)
        w.fence(kind)
    points = [cp for cp, _, _ in run(w)]
    assert [cp.kind for cp in points] == ["fence"] * 4 + ["end"]
    assert all(cp.legal == 2 for cp in points[:4]) and points[-1].legal == 1


def test_eadr_prefixes():
    w = TraceWriter()
    w.op_begin(0)
    w.store(0, u64(1))
    w.store(64, u64(2))
    w.store(128, b"A" * 16)
    w.fence()
    w.store(8, u64(3))
    w.op_end(0)
    points = run(w, model="eadr")
    assert [cp.kind for cp, _, _ in points] == ["op_begin", "fence", "op_end", "end"]
    _, states, images = points[1]
    assert states == {S(), S((1, 0)), S((1, 0), (2, 0)), S((1, 0), (2, 0), (3, 0)),
                      S((1, 0), (2, 0), (3, 0), (3, 1))}
    assert images[S((1, 0), (2, 0), (3, 0))][128:144] == b"A" * 8 + bytes(8)
    _, states, images = points[2]
    assert states == {S(), S((5, 0))}                          # everything before the fence is durable
    assert images[S()][:8] == u64(1) and images[S()][64:72] == u64(2)
    assert points[3][0].legal == 1


def test_eadr_a_locked_instructions_store_is_durable_at_once():
    """Under eADR a CAS (a `locked` fence, then its store) leaves nothing pending: the locked
    instruction drains the store buffer after its store too. Thread 1 read the CAS's value
    before thread 0's next fence, so a crash that took the CAS back would show thread 1 a value
    that never existed. A plain store after it is pending as before."""
    w = TraceWriter()
    w.store(0, u64(1), tid=0)
    w.fence("locked", tid=0)
    w.store(8, u64(2), tid=0, origin="cmpxchg")
    w.op_begin(7, tid=1)                                       # thread 1 acts on what it saw
    w.store(64, u64(3), tid=0)
    w.fence("mfence", tid=0)
    points = run(w, model="eadr")
    assert [cp.kind for cp, _, _ in points] == ["fence", "op_begin", "fence", "end"]
    assert points[1][0].legal == 1 and points[1][1] == {S()}   # the CAS's store is durable
    assert points[2][1] == {S(), S((4, 0))}                    # the plain store after it is not
    assert run(w, model="adr")[1][0].legal == 3                # x86-ADR: not flushed, a prefix of the line


def test_eadr_ignores_flushes_and_fences_for_durability():
    w = TraceWriter()
    w.store(0, u64(1))
    w.flush(0)
    w.ntstore(64, u64(2))
    cp, states, _ = last(w, model="eadr")
    assert cp.legal == 3                                       # a prefix of the global order


def test_exact_count_is_a_big_int():
    w = TraceWriter(pool_size=64 * 100)
    for line in range(100):
        for k in range(3):
            w.store(line * 64 + 8 * k, u64(k + 1))
    sim = Simulator(w.events(), w.image(), region_base=w.pool_base)
    cp = list(sim.crash_points())[-1]
    assert cp.legal == 4 ** 100 and len(cp.pending_lines) == 100 and cp.pending_pieces == 300


def test_stores_outside_every_region_are_ignored():
    w = TraceWriter(pool_size=64)
    w.store(0x10000, u64(1), absolute=True)
    sim = Simulator(w.events(), w.image(), region_base=w.pool_base)
    cp = list(sim.crash_points())[-1]
    assert cp.legal == 1 and sim.unplaced == 1


def test_patches_rebuild_the_base():
    """The runner's base is the initial image plus every crash point's patch, in order."""
    w = TraceWriter(pool_size=256)
    w.store(0, u64(1))
    w.persist(0, 8)
    w.store(64, b"x" * 16)
    w.ntstore(64, u64(7))
    w.fence()
    w.store(64, u64(9))
    w.persist(64, 8)
    sim = Simulator(w.events(), w.image(), region_base=w.pool_base)
    image = bytearray(w.image())
    for cp in sim.crash_points():
        apply_writes(image, cp.patch)
        assert bytes(image) == bytes(sim.image.base)
    assert image[:8] == u64(1) and image[64:80] == u64(9) + b"x" * 8


@pytest.mark.parametrize("model", ["adr", "eadr"])
def test_library_store_is_durable_with_what_came_before_it(model):
    """A `library` store (made inside libpmemobj, logged from the pool's shadow) is durable when
    logged, and so is every earlier piece of its line (ADR: the library flushed the line) or of
    its thread (eADR: its fence drained the store buffer); a store to another line stays pending
    under ADR."""
    w = TraceWriter()
    w.store(0, u64(1))
    w.store(64, u64(2))
    w.store(8, u64(3), origin="library")
    cp, states, images = last(w, model=model)
    if model == "adr":
        assert states == {S(), S((1, 0))}
    else:
        assert states == {S()}
    assert images[S()][:16] == u64(1) + u64(3)


def test_points_unwanted_at_their_event_come_bare_and_the_image_stays_in_step():
    # program mode's NoReorderNoCheck sections: their points need no pending units, and the
    # points after them are the same, image and fingerprint included
    w = TraceWriter()
    for k in range(6):
        w.store(64 * k, u64(k + 1))       # one line each, never flushed: pending to the end
        if k % 2:
            w.flush(64 * (k - 1), "clwb")
        w.fence()
    w.store(8, u64(99))

    def points(unwanted_at=None):
        sim = Simulator(w.events(), w.image(), line_size=w.line_size, region_base=w.pool_base)
        return [(cp.event, len(cp.units), cp.legal, cp.fp, bytes(sim.image.base[:512]))
                for cp in sim.crash_points(unwanted_at=unwanted_at)]
    full = points()
    cut = max(e for e, *_ in full[:-2])
    bare = points(lambda event: event < cut)
    assert [p[0] for p in bare] == [p[0] for p in full]
    assert all(units == 0 and legal == 1 for e, units, legal, *rest in bare if e < cut)
    assert any(units for e, units, *rest in full if e < cut)
    assert [p for p in bare if p[0] >= cut] == [p for p in full if p[0] >= cut]

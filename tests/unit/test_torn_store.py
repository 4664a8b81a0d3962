"""Torn stores decided on hand-written traces (harness/check/torn_store.py): which stores a crash
state keeps in part, the two states that differ from it only in that store (whole, none), and
the rule: a torn store is the cause when both of those pass; a state that also fails with the
store lost entirely is not a tear. Failing and passing are given by a stand-in judge (a function
of the kept pieces), so no runner is needed."""
from __future__ import annotations

from crashcheck.crashsim.simulate import Simulator
from crashcheck.crashsim.trace import read_trace
from crashcheck.crashsim.trace_writer import TraceWriter
from crashcheck.harness.check.torn_store import partial_stores, recovery_reads, thread_reads, torn_of, variants

SLOT = 0x100        # a 16-byte slot {key, value}, one cache line


def _trace(tmp_path, build):
    w = TraceWriter(pool_size=1 << 12)
    sites = {name: w.site(f"{name}.c", 10 + i, name) for i, name in enumerate(("wide", "other", "read"))}
    build(w, sites)
    return read_trace(w.write(tmp_path / "t.trace")), sites


def _point(trace, kind="fence"):
    """The first crash point of KIND with something pending."""
    return next(cp for cp in Simulator.from_trace(trace).crash_points() if cp.kind == kind and cp.units)


def _judge(cp, fails):
    """CHECK and PASSES over CP's states, FAILS(kept (event, part) set) saying which fail."""
    def check(choices):
        return [frozenset(p.key for p in cp.kept(c)) for c in choices]
    return check, lambda kept: not fails(kept)


def _wide(w, s, origin="plain"):
    w.op_begin(0)
    w.store(SLOT, (7).to_bytes(8, "little") * 2, site=s["wide"], origin=origin)   # key and value at once
    w.fence()                       # a crash point with both pieces pending
    w.persist(SLOT, 16)
    w.op_end(0)


def test_a_16_byte_store_kept_in_part_is_a_torn_store(tmp_path):
    trace, s = _trace(tmp_path, lambda w, s: _wide(w, s))
    cp = _point(trace)
    store = next(i for i, ev in enumerate(trace.events) if ev.kind == "store")
    [unit] = cp.units
    assert [p.seq for p in unit.pieces] == [store, store]
    torn = (1,)                     # the key persisted, the value did not
    assert partial_stores(cp, torn) == [store]
    assert partial_stores(cp, (0,)) == [] and partial_stores(cp, (2,)) == []
    assert variants(cp, torn, store) == ((2,), (0,))
    # recovery trusts the key: only the torn state fails
    check, passes = _judge(cp, lambda kept: kept == {(store, 0)})
    t = torn_of(trace, cp, torn, check, passes, "wrong-value")
    assert t is not None and (t.store, t.size, t.pieces, t.kept, t.cls) == (store, 16, 2, 1, "wrong-value")
    assert "wide.c:10" in t.describe(trace) and "persisted in part (1 of 2 pieces)" in t.describe(trace)


def test_a_store_that_had_to_be_durable_is_no_tear(tmp_path):
    trace, s = _trace(tmp_path, lambda w, s: _wide(w, s))
    cp = _point(trace)
    store = next(i for i, ev in enumerate(trace.events) if ev.kind == "store")
    # fails unless the whole store persisted: losing it entirely fails too (an ordering bug)
    check, passes = _judge(cp, lambda kept: len(kept) < 2)
    assert torn_of(trace, cp, (1,), check, passes, "lost-durable-write") is None
    # fails whenever any of it persisted: the whole store fails too
    check, passes = _judge(cp, lambda kept: len(kept) > 0)
    assert torn_of(trace, cp, (1,), check, passes, "wrong-value") is None
    assert store in partial_stores(cp, (1,))


def test_a_copy_whose_pieces_persist_in_any_order(tmp_path):
    trace, s = _trace(tmp_path, lambda w, s: _wide(w, s, origin="memcpy"))
    cp = _point(trace)
    store = next(i for i, ev in enumerate(trace.events) if ev.kind == "store")
    [unit] = cp.units
    assert unit.orders is not None            # a memcpy: any subset of its pieces in the line
    only_value = next(c for c, kept in enumerate(unit.orders) if kept == (1,))
    whole, none = variants(cp, (only_value,), store)
    assert set(unit.orders[whole[0]]) == {0, 1} and unit.orders[none[0]] == ()
    check, passes = _judge(cp, lambda kept: kept == {(store, 1)})
    t = torn_of(trace, cp, (only_value,), check, passes, "wrong-value")
    assert t is not None and t.store == store


def test_an_8_byte_store_across_a_word_and_the_other_thread_that_read_it(tmp_path):
    def build(w, s):
        w.op_begin(0, tid=1)
        w.store(SLOT + 4, b"\x01" * 8, tid=1, site=s["wide"])    # crosses the word at SLOT + 8
        w.op_begin(1, tid=2)
        w.load(SLOT + 8, 8, tid=2, site=s["read"])               # reads its second half
        w.load(SLOT + 32, 8, tid=2, site=s["other"])             # other bytes: not a read of it
        w.op_end(1, tid=2)
        w.fence(tid=1)
        w.persist(SLOT, 16, tid=1)
        w.op_end(0, tid=1)
    trace, s = _trace(tmp_path, build)
    cp = _point(trace)              # at the fence, after thread 2's loads
    store = next(i for i, ev in enumerate(trace.events) if ev.kind == "store")
    assert len(cp.units[0].pieces) == 2 and partial_stores(cp, (1,)) == [store]
    assert thread_reads(trace, store, cp.event) == ["thread 2 at read.c:12"]
    check, passes = _judge(cp, lambda kept: kept == {(store, 0)})
    t = torn_of(trace, cp, (1,), check, passes, "wrong-value")
    assert t is not None and t.reads == ["thread 2 at read.c:12"] and "read by thread 2" in t.describe(trace)


def test_only_the_torn_store_may_differ(tmp_path):
    def build(w, s):
        w.op_begin(0)
        w.store(SLOT, b"\x01" * 16, site=s["wide"])
        w.store(SLOT + 16, b"\x02" * 8, site=s["other"])          # same line, after it
        w.fence()
        w.persist(SLOT, 24)
        w.op_end(0)
    trace, s = _trace(tmp_path, build)
    cp = _point(trace)
    store = next(i for i, ev in enumerate(trace.events) if ev.kind == "store")
    # keeping the first piece only: the whole variant keeps the second piece too, not the later store
    assert variants(cp, (1,), store) == ((2,), (0,))
    # the later store kept with the wide one whole: no state differs from (3,) in the wide store alone
    assert partial_stores(cp, (3,)) == []


def test_recovery_first_load_of_the_torn_bytes(tmp_path):
    trace, s = _trace(tmp_path, lambda w, s: _wide(w, s))
    store = next(i for i, ev in enumerate(trace.events) if ev.kind == "store")
    w = TraceWriter(pool_size=1 << 12)
    other, first, later = (w.site("recover.c", n, "recover") for n in (5, 6, 7))
    w.load(SLOT + 16, 8, site=other)          # the next slot: not the store's bytes
    w.load(SLOT + 8, 8, site=first)           # the value half
    w.load(SLOT, 8, site=later)
    recovery = read_trace(w.write(tmp_path / "r.trace"))
    assert recovery_reads(trace, recovery, store) == ["recovery at recover.c:6"]
    # a recovery traced without loads names nothing
    w = TraceWriter(pool_size=1 << 12)
    w.store(SLOT + 32, b"\x01" * 8)
    assert recovery_reads(trace, read_trace(w.write(tmp_path / "n.trace")), store) == []

"""Persistency-race candidates from one hand-written threaded trace (harness/check/race_windows.py):
a load of a store's bytes by another thread that nothing orders outside the store's persist window
is a candidate, in this interleaving or a predicted one; happens-before (spawn, join, an atomic
publication read by the loader), a common lock, a never-durable store and eADR drop it."""
from __future__ import annotations

from crashcheck.crashsim.persistency import ModelOptions
from crashcheck.crashsim.trace import read_trace
from crashcheck.crashsim.trace_writer import TraceWriter
from crashcheck.harness.check.race_windows import candidates

X, F = 0x100, 0x200       # a data word and a flag word, on two lines


def _trace(tmp_path, build):
    w = TraceWriter(pool_size=1 << 12, loads=True)
    sites = {name: w.site(f"{name}.c", 10 + i, name) for i, name in enumerate(("put", "get", "flag", "check"))}
    w.mark("cc-sync spawn 1")
    w.mark("cc-sync spawn 2")
    build(w, sites)
    return read_trace(w.write(tmp_path / "t.trace")), sites


def _found(trace, model="adr"):
    cands, stats = candidates(trace, ModelOptions(model=model))
    return [(c.store_tid, c.store_site, c.load_tid, c.load_site, c.in_window) for c in cands], stats


def test_a_load_after_the_window_that_nothing_orders_is_predicted(tmp_path):
    def build(w, s):
        w.store(X, b"\x07" * 8, tid=1, site=s["put"])
        w.persist(X, 8, tid=1)                       # durable before thread 2 runs, in this run only
        w.load(X, 8, tid=2, site=s["get"])
    trace, s = _trace(tmp_path, build)
    found, stats = _found(trace)
    assert found == [(1, s["put"], 2, s["get"], False)]
    assert (stats.stores, stats.loads, stats.candidates, stats.dropped_hb) == (1, 1, 1, 0)
    assert stats.seconds >= 0


def test_a_load_inside_the_window_is_one_and_comes_first(tmp_path):
    def build(w, s):
        w.store(X, b"\x07" * 8, tid=1, site=s["put"])
        w.load(X, 8, tid=2, site=s["get"])           # pending: read inside the window
        w.persist(X, 8, tid=1)
        w.load(X, 8, tid=2, site=s["get"])           # same pair, after: one candidate per pair
    trace, s = _trace(tmp_path, build)
    found, _ = _found(trace)
    assert found == [(1, s["put"], 2, s["get"], True)]


def test_an_atomic_publication_after_the_fence_orders_the_load(tmp_path):
    def build(w, s):
        w.store(X, b"\x07" * 8, tid=1, site=s["put"])
        w.persist(X, 8, tid=1)
        w.store(F, b"\x01" * 8, tid=1, site=s["flag"], origin="atomic")   # release after the fence
        w.load(F, 8, tid=2, site=s["check"])                              # acquire
        w.load(X, 8, tid=2, site=s["get"])
    trace, s = _trace(tmp_path, build)
    found, stats = _found(trace)
    assert (1, s["put"], 2, s["get"], False) not in found
    assert stats.dropped_hb >= 1


def test_reading_a_later_value_of_the_word_still_pairs_with_the_dirty_store_before_it(tmp_path):
    # a CAS publishes X dirty, its flush and fence, then a CAS cleans X: a reader after the clean
    # CAS acquires from X itself, which orders nothing against X's dirty store (another
    # interleaving lets it read that one); a publication of another word after the fence still does
    def build(w, s):
        w.store(X, b"\x07" * 8, tid=1, site=s["put"], origin="cmpxchg")
        w.persist(X, 8, tid=1)
        w.store(X, b"\x06" * 8, tid=1, site=s["flag"], origin="cmpxchg")
        w.persist(X, 8, tid=1)
        w.load(X, 8, tid=2, site=s["get"])
    trace, s = _trace(tmp_path, build)
    found, _ = _found(trace)
    assert (1, s["put"], 2, s["get"], False) in found
    assert (1, s["flag"], 2, s["get"], False) in found


def test_a_candidate_counts_the_operations_ended_between_its_store_and_load(tmp_path):
    def build(w, s):
        w.op_begin(0, tid=1)
        w.store(X, b"\x07" * 8, tid=1, site=s["put"])
        w.persist(X, 8, tid=1)
        w.op_end(0, tid=1)
        for op in (1, 2):
            w.op_begin(op, tid=1)
            w.op_end(op, tid=1)
        w.load(X, 8, tid=2, site=s["get"])
    trace, s = _trace(tmp_path, build)
    [c] = candidates(trace, ModelOptions())[0]
    assert c.ops_between == 3


def test_a_publication_before_the_fence_orders_nothing(tmp_path):
    def build(w, s):
        w.store(X, b"\x07" * 8, tid=1, site=s["put"])
        w.store(F, b"\x01" * 8, tid=1, site=s["flag"], origin="atomic")   # published while X pending
        w.persist(X, 8, tid=1)
        w.persist(F, 8, tid=1)
        w.load(F, 8, tid=2, site=s["check"])
        w.load(X, 8, tid=2, site=s["get"])
    trace, s = _trace(tmp_path, build)
    found, _ = _found(trace)
    assert (1, s["put"], 2, s["get"], False) in found


def test_a_common_lock_drops_it_and_two_read_holds_do_not(tmp_path):
    def build(mode):
        def b(w, s):
            w.mark("cc-sync acq 1", tid=1)
            w.store(X, b"\x07" * 8, tid=1, site=s["put"])
            w.persist(X, 8, tid=1)
            w.mark("cc-sync rel 1", tid=1)
            w.mark(f"cc-sync {mode} 1", tid=2)
            w.load(X, 8, tid=2, site=s["get"])
            w.mark("cc-sync rel 1", tid=2)
        return b
    trace, s = _trace(tmp_path, build("acq"))
    found, stats = _found(trace)
    assert found == [] and stats.dropped_lock == 1

    # the writer stored under the lock but released it before its fence: the window is unlocked
    def unlocked(w, s):
        w.mark("cc-sync acq 1", tid=1)
        w.store(X, b"\x07" * 8, tid=1, site=s["put"])
        w.mark("cc-sync rel 1", tid=1)
        w.persist(X, 8, tid=1)
        w.mark("cc-sync acq 1", tid=2)
        w.load(X, 8, tid=2, site=s["get"])
        w.mark("cc-sync rel 1", tid=2)
    trace, s = _trace(tmp_path, unlocked)
    assert _found(trace)[0] == [(1, s["put"], 2, s["get"], False)]


def test_a_load_before_the_store_is_predicted_unless_ordered(tmp_path):
    def build(w, s):
        w.load(X, 8, tid=2, site=s["get"])           # before the store: another schedule reads it
        w.store(X, b"\x07" * 8, tid=1, site=s["put"])
        w.persist(X, 8, tid=1)
    trace, s = _trace(tmp_path, build)
    assert _found(trace)[0] == [(1, s["put"], 2, s["get"], False)]

    def joined(w, s):
        w.load(X, 8, tid=2, site=s["get"])
        w.mark("cc-sync join 2", tid=0)              # thread 0 joined 2, then spawned 3
        w.mark("cc-sync spawn 3", tid=0)
        w.store(X, b"\x07" * 8, tid=3, site=s["put"])
        w.persist(X, 8, tid=3)
    trace, s = _trace(tmp_path, joined)
    found, stats = _found(trace)
    assert found == [] and stats.dropped_hb == 1


def test_a_never_durable_store_and_eadr_give_none(tmp_path):
    def build(w, s):
        w.store(X, b"\x07" * 8, tid=1, site=s["put"])       # never flushed: a lost-durable-write
        w.load(X, 8, tid=2, site=s["get"])
    trace, _ = _trace(tmp_path, build)
    found, stats = _found(trace)
    assert found == [] and stats.never_durable == 1

    def durable(w, s):
        w.store(X, b"\x07" * 8, tid=1, site=s["put"])
        w.load(X, 8, tid=2, site=s["get"])
        w.persist(X, 8, tid=1)
    trace, _ = _trace(tmp_path, durable)
    assert _found(trace, "eadr")[0] == []


def test_loads_of_one_place_through_two_inline_paths_are_one_candidate_the_first(tmp_path):
    """A reader that loads a word in `seen()` and, finding it clean, again in `help()` inlined into
    `seen()` (two sites of one place: trace version 4's inline chains differ) is one candidate,
    of its first load: the one it decides on."""
    def build(w, s):
        raw = w.site("h.c", 31, "load", inlined_file="h.c", inlined_line=192, inlined_func="get",
                     inlined=("/src/h.c:102 in seen", "/src/h.c:192 in get"))
        helped = w.site("h.c", 31, "load", inlined_file="h.c", inlined_line=192, inlined_func="get",
                        inlined=("/src/h.c:41 in help", "/src/h.c:116 in seen", "/src/h.c:192 in get"))
        s["raw"], s["helped"] = raw, helped
        w.store(X, b"\x07" * 8, tid=1, site=s["put"])
        w.persist(X, 8, tid=1)
        w.load(X, 8, tid=2, site=raw)
        w.load(X, 8, tid=2, site=helped)
    trace, s = _trace(tmp_path, build)
    found, _ = _found(trace)
    assert found == [(1, s["put"], 2, s["raw"], False)]

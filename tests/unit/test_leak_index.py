"""specs/leaks.py LeakIndex: which allocations the operations in flight at a crash made or freed,
for one thread and for several threads whose operations overlap in the trace."""
from __future__ import annotations

from crashcheck.crashsim.trace import read_trace
from crashcheck.crashsim.trace_writer import TraceWriter
from crashcheck.specs.leaks import LeakIndex


def index_of(tmp_path, build) -> LeakIndex:
    w = TraceWriter(pool_size=4096)
    build(w)
    return LeakIndex(read_trace(w.write(tmp_path / "t.trace")))


def test_one_thread_one_operation_in_flight(tmp_path):
    def build(w):
        w.op_begin(0)             # event 0
        w.alloc(64, 32)           # 1
        w.op_end(0)               # 2
        w.op_begin(1)             # 3
        w.alloc(128, 32)          # 4
        w.free(64)                # 5
        w.op_end(1)               # 6
    ix = index_of(tmp_path, build)
    assert ix.touched_in_flight(0) == set()
    assert ix.touched_in_flight(1) == {64}
    assert ix.touched_in_flight(2) == {64}          # op_end(0) not yet logged: still inside
    assert ix.touched_in_flight(3) == set()
    assert ix.touched_in_flight(5) == {128, 64}
    assert ix.touched_in_flight(7) == set()


def test_overlapping_operations_of_two_threads(tmp_path):
    """Thread 1's operation 0 spans thread 2's operation 1: a crash inside both counts the
    allocations of both, each allocation belonging to the operation of its own thread."""
    def build(w):
        w.op_begin(0, tid=1)      # 0
        w.alloc(64, 32, tid=1)    # 1
        w.op_begin(1, tid=2)      # 2
        w.alloc(128, 32, tid=2)   # 3
        w.op_end(1, tid=2)        # 4
        w.alloc(192, 32, tid=1)   # 5
        w.op_end(0, tid=1)        # 6
    ix = index_of(tmp_path, build)
    assert ix.touched_in_flight(2) == {64, 192}
    assert ix.touched_in_flight(3) == {64, 192, 128}
    assert ix.touched_in_flight(5) == {64, 192}      # operation 1 has returned
    assert ix.touched_in_flight(7) == set()


def test_unexpected_leak_is_named_by_the_object_nothing_explains():
    # A delete in flight leaves its unlinked leaf allocated by design; beside it lies an old value
    # an earlier update never freed. The leak is unexpected and is named (and grouped) by the old
    # value, not by the leaf that sorts first.
    from crashcheck.specs.leaks import expected, unexplained_first
    known = [{"class": "leak", "alloc_func": "leaf_new", "reason": "by design"}]
    leaf = {"off": 0x100, "size": 16, "site": {"file": "t.c", "line": 44, "func": "leaf_new"}}
    value = {"off": 0x200, "size": 16, "site": {"file": "t.c", "line": 35, "func": "value_new"}}
    in_flight = {0x100}
    assert expected(known, [leaf], in_flight) is not None
    assert expected(known, [leaf, value], in_flight) is None
    assert unexplained_first(known, [leaf, value], in_flight) == [value, leaf]
    # a leaf not touched by the operation in flight is not explained either: order kept
    assert unexplained_first(known, [leaf, value], set()) == [leaf, value]

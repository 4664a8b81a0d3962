"""Fix candidates as trace edits (harness/check/fix_search.py, crashsim/trace_edit.py), without a
structure: an edit names source lines and applies at every execution of them; the candidates for
a lost store come in the order fewest instructions, then at the lost store's own code, then latest;
and the edited trace no longer allows the failing state (the lost store is durable at its crash
point), while an edit elsewhere leaves it pending."""
from crashcheck.crashsim.simulate import Simulator
from crashcheck.crashsim.trace import read_trace
from crashcheck.crashsim.trace_writer import TraceWriter
from crashcheck.harness.check.findings import Finding
from crashcheck.harness.check.fix_search import Edit, about_ordering, address_of, candidates, trace_edit


def _trace(tmp_path):
    w = TraceWriter(pool_size=4096)
    data = w.site("a.c", 10, "put")
    link = w.site("a.c", 11, "put")
    flush = w.site("a.c", 12, "put")
    fence = w.site("a.c", 13, "put")
    for op in range(2):                        # the same lines run twice: an edit applies to both
        w.op_begin(op)
        w.store(op * 256, b"v" * 8, site=data)        # never flushed: the bug
        w.store(op * 256 + 128, b"p" * 8, site=link)  # publishes it
        w.flush(op * 256 + 128, site=flush)
        w.fence(site=fence)
        w.op_end(op)
    path = tmp_path / "t.trace"
    w.write(path)
    return read_trace(path)


def _point(trace, kind, op):
    for cp in Simulator.from_trace(trace).crash_points():
        if cp.kind == kind and cp.last_done == op:
            return cp
    raise AssertionError("no such crash point")


def _pending_lines(trace):
    base = trace.pool_base
    return [(cp.kind, cp.last_done, [a - base for a in cp.pending_lines]) for cp in Simulator.from_trace(trace).crash_points()
            if cp.kind == "op_end"]


def test_candidates_and_their_order(tmp_path):
    trace = _trace(tmp_path)
    cp = _point(trace, "op_end", 0)
    assert [a - trace.pool_base for a in cp.pending_lines] == [0]              # the data store of operation 0 is still pending
    f = Finding("lost-durable-write", "", ("lost-durable-write", ""), point=cp, choice=(0,))
    assert about_ordering(f)
    got = [c.edits for c in candidates(trace, f)]
    # a flush alone suffices in principle (a fence follows): one instruction, first
    assert got[0] == (Edit("flush-after", "a.c:10"),)
    assert (Edit("persist-after", "a.c:10"),) in got
    # a crash-free failure and a leak are not about ordering
    assert not about_ordering(Finding("wrong-value", "", ("wrong-value", "")))
    assert not about_ordering(Finding("leak", "", ("leak", ""), point=cp, choice=(0,)))


def test_edit_applies_to_every_execution_and_forbids_the_state(tmp_path):
    trace = _trace(tmp_path)
    edited = trace_edit(trace, (Edit("flush-after", "a.c:10"),)).apply(trace)
    assert len(edited.events) == len(trace.events) + 2          # one flush per execution
    assert [x for x in _pending_lines(edited)] == [("op_end", 0, []), ("op_end", 1, [])]
    # an edit elsewhere (a fence before the publishing store) leaves the data store pending
    wrong = trace_edit(trace, (Edit("fence-before", "a.c:11"),)).apply(trace)
    assert [x[2] for x in _pending_lines(wrong)] == [[0], [0, 256]]
    # moving the fence of line 13 above line 11 takes the old fence out: the link is not durable
    moved = trace_edit(trace, (Edit("move-fence", "a.c:11", "a.c:13"),)).apply(trace)
    assert sum(ev.kind == "fence" for ev in moved.events) == 2
    assert [x[2] for x in _pending_lines(moved)] == [[0, 128], [0, 256, 384]]
    assert trace.events == _trace(tmp_path).events             # the original is unchanged


def test_address_of_a_source_line():
    assert address_of("\tstore8(slot, ref);") == "slot"
    assert address_of("    n->key = k;") == "&n->key"
    assert address_of("\tleaf->value[i] = v;") == "&leaf->value[i]"
    assert address_of("}") == "ADDR" and address_of("\tif (x == y)") == "ADDR"
    assert address_of("\tcase N4: fill_n4((struct art_node4 *)n, e); break;") == "n"
    assert address_of("\t*ref = nu;") == "ref"
    assert address_of("\tstruct art_value *v = art_value_alloc(val);") == "v"


def test_an_edit_after_a_call_goes_after_the_inlined_function(tmp_path):
    w = TraceWriter(pool_size=4096)
    inner = w.site("h.c", 5, "write_value", inlined_file="a.c", inlined_line=20, inlined_func="update")
    inner2 = w.site("h.c", 6, "write_value", inlined_file="a.c", inlined_line=20, inlined_func="update")
    helper = w.site("persist.h", 50, "cc_flush_line", inlined_file="h.c", inlined_line=7,
                    inlined_func="write_value")
    link = w.site("a.c", 21, "update")
    w.op_begin(0)
    w.store(0, b"v" * 8, site=inner)
    w.store(64, b"w" * 8, site=inner2)
    w.flush(0, site=helper)                   # a helper inlined into the called function: still the call
    w.store(128, b"p" * 8, site=link)
    w.fence()
    w.op_end(0)
    path = tmp_path / "c.trace"
    w.write(path)
    trace = read_trace(path)
    edited = trace_edit(trace, (Edit("persist-after", "a.c:20", "call"),)).apply(trace)
    kinds = [(ev.kind, ev.addr - trace.pool_base if ev.kind == "flush" else None) for ev in edited.events]
    # both lines the call stored flushed once, then a fence, after its last event, before the link
    at = kinds.index(("store", None))
    assert kinds[at:at + 7] == [("store", None), ("store", None), ("flush", 0), ("flush", 0), ("flush", 64),
                                ("fence", None), ("store", None)]
    cp = _point(edited, "op_end", 0)
    assert [a - trace.pool_base for a in cp.pending_lines] == [128]


def test_flush_object_flushes_the_new_object_whole_before_the_fence(tmp_path):
    w = TraceWriter(pool_size=4096)
    build = w.site("n.c", 5, "build")
    flush = w.site("w.c", 95, "grow")
    fence = w.site("w.c", 96, "grow")
    swing = w.site("w.c", 99, "grow")
    w.op_begin(0)
    w.alloc(0x100, 192)
    for off in (0x100, 0x140, 0x180):               # a node of three lines
        w.store(off, b"n" * 8, site=build)
    w.flush(0x100, site=flush)                      # one line only: the bug
    w.fence(site=fence)
    w.store(0x400, b"p" * 8, site=swing)            # published
    w.flush(0x400)
    w.fence()
    w.op_end(0)
    path = tmp_path / "o.trace"
    w.write(path)
    trace = read_trace(path)
    assert [a - trace.pool_base for a in _point(trace, "op_end", 0).pending_lines] == [0x140, 0x180]
    f = Finding("invariant-violation", "", ("invariant-violation", ""), point=_point(trace, "op_end", 0),
                choice=(0, 0))
    edits = [c.edits for c in candidates(trace, f)]
    assert (Edit("flush-object", "w.c:96", "n.c:5"),) in edits
    edited = trace_edit(trace, (Edit("flush-object", "w.c:96", "n.c:5"),)).apply(trace)
    assert _point(edited, "op_end", 0).pending_lines == []

"""persist-object-before (harness/check/fix_edits.py): a node built in an operation and published
by a swing store before the code persists it (ART+CoW's swing-first). The edit flushes, before
the swing, every line of the object the swung pointer points into and of the new objects it
points to, that is not flushed since written, then fences; the fix search proposes it first when
the code flushes the lost line itself only after the swing, and its words name the allocation."""
from crashcheck.crashsim.simulate import Simulator
from crashcheck.crashsim.trace import read_trace
from crashcheck.crashsim.trace_writer import TraceWriter
from crashcheck.harness.check.findings import Finding
from crashcheck.harness.check.fix_search import Edit, candidates, describe, trace_edit
from crashcheck.harness.check.fix_words import statement, value_of

NODE, LEAF, OTHER, SLOT = 0x100, 0x300, 0x500, 0x400


def _trace(tmp_path):
    w = TraceWriter(pool_size=4096)
    alloc = w.site("n.c", 90, "node_alloc")
    build = w.site("n.c", 142, "fill")
    leafs = w.site("n.c", 200, "leaf")
    other = w.site("n.c", 300, "log")
    swing = w.site("w.c", 36, "publish")
    late = w.site("w.c", 38, "publish")
    base = w.pool_base
    w.op_begin(0)
    w.alloc(NODE, 192, site=alloc)                   # a node of three lines
    w.alloc(LEAF, 64, site=alloc)                    # its new child, never flushed
    w.alloc(OTHER, 64, site=alloc)                   # written in the operation, not published
    w.store(LEAF, b"l" * 8, site=leafs)
    w.store(OTHER, b"o" * 8, site=other)
    w.store(NODE, b"h" * 8, site=build)
    w.store(NODE + 0x40, (base + LEAF).to_bytes(8, "little"), site=build)
    w.store(NODE + 0x80, b"k" * 8, site=build)
    w.flush(NODE)                                    # its first line already flushed: not again
    w.store(SLOT, (base + NODE).to_bytes(8, "little"), site=swing)    # the swing, first: the bug
    w.flush(SLOT, site=swing)
    w.fence(site=swing)
    for line in (NODE, NODE + 0x40, NODE + 0x80):   # the node persisted after it is published
        w.flush(line, site=late)
    w.fence(site=late)
    w.op_end(0)
    path = tmp_path / "p.trace"
    w.write(path)
    return read_trace(path)


def test_the_edit_persists_the_published_node_and_its_new_child_before_the_swing(tmp_path):
    trace = _trace(tmp_path)
    base = trace.pool_base
    edit = Edit("persist-object-before", "w.c:36", "n.c:90")
    edited = trace_edit(trace, (edit,)).apply(trace)
    shown = [(ev.kind, ev.addr - base if ev.kind in ("flush", "store") else None) for ev in edited.events]
    at = shown.index(("store", NODE + 0x80))
    # the node's lines not flushed since written (not its first line), then the child's, a fence,
    # then the swing; the object written but not published (OTHER) is left alone
    assert shown[at + 1:at + 7] == [("flush", NODE), ("flush", NODE + 0x40), ("flush", NODE + 0x80),
                                    ("flush", LEAF), ("fence", None), ("store", SLOT)]
    assert len(edited.events) == len(trace.events) + 4
    # no crash point of the edited trace leaves a line of the node or its child pending once the
    # swing can be durable
    for cp in Simulator.from_trace(edited).crash_points():
        pend = [a - base for a in cp.pending_lines]
        if SLOT in pend or cp.event > shown.index(("store", SLOT)):
            assert not {NODE + 0x40, NODE + 0x80, LEAF} & set(pend)
    assert describe((edit,)) == ("persist the new object allocated at n.c:90 (each line written and not yet "
                                 "flushed) before the store at w.c:36")
    assert value_of("\t*ref = nu;") == "nu" and value_of("\tstore8(slot, (uint64_t)leaf);") == "leaf"
    # the statement: the node up to its last line not yet flushed, and its new child
    words = statement(trace, edit)
    assert "o < 192; o += 64) _mm_clwb((char *)VALUE + o);" in words     # (no source file: VALUE)
    assert "the new objects it points to" in words and words.rstrip().endswith("before the store publishes it */")


def test_the_search_proposes_it_first_when_the_code_persists_the_node_after_the_swing(tmp_path):
    trace = _trace(tmp_path)
    base = trace.pool_base
    # the crash at the late fence: the swing durable, the node's last line lost
    cp = next(p for p in Simulator.from_trace(trace).crash_points()
              if p.kind == "fence" and NODE + 0x80 in [a - base for a in p.pending_lines])
    lines = [u.line - base for u in cp.units]
    choice = tuple(0 if line == NODE + 0x80 else u.choices - 1 for line, u in zip(lines, cp.units))
    f = Finding("invariant-violation", "", ("invariant-violation", ""), point=cp, choice=choice)
    # the failure hinges on the swing, durable at its own fence (state_shrink.py earliest_needed)
    swing_point = next(p for p in Simulator.from_trace(trace).crash_points()
                       if p.kind == "fence" and SLOT in [a - base for a in p.pending_lines])
    f.needed_early = [next(u for u in swing_point.units if u.line - base == SLOT).pieces[0]]
    assert trace.events[f.needed_early[0].seq].addr - base == SLOT
    got = [c.edits for c in candidates(trace, f)]
    assert got[0] == (Edit("persist-object-before", "w.c:36", "n.c:90"),)
    assert (Edit("flush-after", "n.c:142"),) in got[1:]
    # without the late flush (the line is never flushed: a flush is missing, not misplaced), the
    # cheapest edits come first and persisting the node is one candidate among them
    trace.events = [ev for ev in trace.events if not (ev.kind == "flush" and ev.addr - base == NODE + 0x80)]
    got = [c.edits for c in candidates(trace, f)]
    assert got[0] != (Edit("persist-object-before", "w.c:36", "n.c:90"),)
    assert (Edit("persist-object-before", "w.c:36", "n.c:90"),) in got

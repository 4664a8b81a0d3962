"""A history's load phase is never traced (instrument/runtime/rt_trace.c `cc_trace_from_here`,
harness/check/traced_run.py): the trace starts over at the first checked operation from the pool's
bytes then, with the load's live objects and an op_end of its last operation, so a crossing
history (issue 50) costs what its checked operations do, and what a checked operation does to the
load's objects is still judged and attributed as before."""
from crashcheck.harness.check.pipeline import Checker
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.target import structures
from crashcheck.harness.check.user_history import read_history


def test_the_trace_starts_at_the_load_end_and_a_bug_past_it_is_still_found(trees_built):
    s = structures.get("wort")
    with Checker(s, "no-flush-link", Settings(seed=1)) as checker:
        # 40 inserts as the load, then one checked insert and a lookup
        text = "; ".join([f"insert {k} {k + 1}" for k in range(1, 41)] + ["insert 100 7", "lookup 100"])
        ops = read_history(text, s, checker.model, 40)
        assert ops.load == 40 and len(ops) == 42
        out = checker.check(ops)
        kinds = [ev.kind for ev in out.trace.events]
        begun = [ev.addr for ev in out.trace.events if ev.kind == "op_begin"]
        assert begun == [40, 41]                  # none of the load's operations is in the trace
        # the regions (from the pool's bytes then), the load's live objects (its 40 values, its
        # leaves and nodes), then the end of its last operation
        head = kinds[:kinds.index("op_begin")]
        assert out.trace.regions and set(head[:-1]) == {"alloc"} and len(head) > 40 and head[-1] == "op_end"
        assert out.trace.events[len(head) - 1].addr == 39
        # its crash points count the 40 operations done, and the bug of the checked insert is found
        assert any(f.cls == "lost-durable-write" for f in out.findings), [f.cls for f in out.findings]
        assert all(f.point is None or f.point.last_done is None or f.point.last_done >= 39 for f in out.findings)


def test_a_correct_structure_freeing_a_load_object_leaks_only_what_its_catalog_expects(trees_built):
    # (deleting a key the load inserted frees the load's objects inside a checked operation: the
    # leak of a crash there must name the allocating function of wort's known leaks, which only
    # the load's alloc events logged again give)
    s = structures.get("wort")
    with Checker(s, None, Settings(seed=1)) as checker:
        ops = read_history("insert 1 2; insert 2 3; delete 1; lookup 2", s, checker.model, 2)
        out = checker.check(ops)
        assert [ev.addr for ev in out.trace.events if ev.kind == "op_begin"] == [2, 3]
        assert not [f for f in out.findings if not f.expected], [(f.cls, f.detail) for f in out.findings]

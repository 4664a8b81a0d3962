"""One cause, one record, proven on the failing states (harness/run/fold_proofs.py
fold_by_states): an operation writes two lines of a new copy (a.c:10, a.c:20) and swings to it
(a.c:11) before anything is flushed, the fence after it. Two failures lose a different line of
the copy, both need the swing persisted (they hinge on it). The commit of the swing (what came
before persisted, then the swing) forbids both states: it removes the other failure, which is
folded into its bug. A flush of one line forbids only that line's loss: the other failure stays
a bug of its own unless a fix removes it."""
from crashcheck.crashsim.persistency import ModelOptions
from crashcheck.crashsim.simulate import Simulator
from crashcheck.crashsim.trace import read_trace
from crashcheck.crashsim.trace_writer import TraceWriter
from crashcheck.harness.check.findings import Finding
from crashcheck.harness.check.fix_edits import Edit
from crashcheck.harness.check.fix_search import FixResult
from crashcheck.harness.run.fold_proofs import fold_by_states
from crashcheck.harness.triage import bugs


def _trace(tmp_path, late=False):
    """LATE: the second copy line (a.c:20) written after the swing (a commit of the swing persists
    what came before it, not this line)."""
    w = TraceWriter(pool_size=4096)
    a, b = w.site("a.c", 10, "copy"), w.site("a.c", 20, "copy")
    swing, fence = w.site("a.c", 11, "copy"), w.site("a.c", 13, "copy")
    w.op_begin(0)
    w.store(0, b"a" * 8, site=a)
    for addr, data, site in [(64, b"b", b), (128, b"p", swing)][::-1 if late else 1]:
        w.store(addr, data * 8, site=site)
    w.fence(site=fence)
    w.op_end(0)
    path = tmp_path / ("late.trace" if late else "t.trace")
    w.write(path)
    return read_trace(path)


def _finding(trace, keep):
    """The failure at the fence whose state keeps the swing and the copy line KEEP (0 or 64) and
    loses the other, shrunk."""
    cp = next(p for p in Simulator.from_trace(trace).crash_points() if p.kind == "fence")
    assert [u.line - trace.pool_base for u in cp.units] == [0, 64, 128]
    choice = (1 if keep == 0 else 0, 1 if keep == 64 else 0, 1)
    f = Finding("invariant-violation", "rule broken", ("invariant-violation", "rule: check at a.c:99"),
                point=cp, choice=choice)
    f.needed = [cp.units[2].pieces[0]]
    f.shrunk = True
    return f


def _fix(f, *edits):
    f.fix = FixResult(edits=tuple(edits))
    return bugs.fix_key(f)


def test_a_commit_of_the_swing_removes_the_other_lines_loss(tmp_path):
    trace = _trace(tmp_path)
    loses_a, loses_b = _finding(trace, keep=64), _finding(trace, keep=0)
    assert bugs.lost_cause(trace, loses_a) == ("a.c:10",) and bugs.lost_cause(trace, loses_b) == ("a.c:20",)
    commit = _fix(loses_a, Edit("commit", "a.c:11"))
    flush_b = _fix(loses_b, Edit("persist-after", "a.c:20"))
    assert len(bugs.merge([loses_a, loses_b], lambda f: f, lambda f: trace)) == 2     # before: two records
    # (merged from the workers' shares, whose work folders, the images of the traces' regions
    # with them, are gone by then)
    assert trace.regions
    for region in trace.regions:
        region.image.unlink()
    assert fold_by_states(ModelOptions(), [(loses_a, trace), (loses_b, trace)], float("inf")) == 2
    assert loses_b.removed_by == [commit]       # the commit forbids losing a.c:20 before the swing
    assert loses_a.removed_by == []             # a flush of a.c:20 still lets a.c:10 be lost
    [bug] = bugs.merge([loses_a, loses_b], lambda f: f, lambda f: trace)
    assert flush_b != commit and len(bug) == 2


def test_one_lines_fix_folds_nothing_and_no_hinge_no_proof(tmp_path):
    trace = _trace(tmp_path)
    loses_a, loses_b = _finding(trace, keep=64), _finding(trace, keep=0)
    _fix(loses_a, Edit("persist-after", "a.c:10"))
    _fix(loses_b, Edit("persist-after", "a.c:20"))
    fold_by_states(ModelOptions(), [(loses_a, trace), (loses_b, trace)], float("inf"))
    assert loses_a.removed_by == [] and loses_b.removed_by == []
    assert len(bugs.merge([loses_a, loses_b], lambda f: f, lambda f: trace)) == 2
    # without a store both hinge on, no pair is tried (the commit would forbid it: not asked)
    loses_a.fix, loses_b.needed = None, []
    _fix(loses_a, Edit("commit", "a.c:11"))
    assert fold_by_states(ModelOptions(), [(loses_a, trace), (loses_b, trace)], float("inf")) == 0
    assert loses_b.removed_by == []


def test_a_state_that_loses_two_bugs_stores_joins_one_of_them(tmp_path):
    """WORT's insert's unflushed link and delete's unflushed unlink: a state that fails only when
    both are lost is removed by either bug's fix; it joins the bug whose store it loses first (in
    trace order), and never joins the two bugs into one."""
    trace = _trace(tmp_path)
    cp = next(p for p in Simulator.from_trace(trace).crash_points() if p.kind == "fence")
    link, unlink, both = (Finding("invariant-violation", "rule broken", ("invariant-violation", f"rule: {n}"),
                                  point=cp, choice=c) for n, c in (("a", (0, 1, 1)), ("b", (1, 0, 1)), ("ab", (0, 0, 1))))
    for f in (link, unlink, both):
        f.shrunk = True
    assert bugs.lost_cause(trace, both) == ("a.c:10", "a.c:20")
    fix_link = _fix(link, Edit("persist-after", "a.c:10"))
    _fix(unlink, Edit("persist-after", "a.c:20"))
    examples = [(unlink, trace), (link, trace), (both, trace)]
    assert len(bugs.merge([f for f, _ in examples], lambda f: f, lambda f: trace)) == 3
    fold_by_states(ModelOptions(), examples, float("inf"))
    assert both.removed_by == [fix_link] and link.removed_by == [] and unlink.removed_by == []
    out = bugs.merge([f for f, _ in examples], lambda f: f, lambda f: trace)
    assert sorted(len(m) for m in out) == [1, 2] and [m for m in out if len(m) == 2][0][0] in (link, both)


def test_every_state_of_the_symptom_tried_must_be_forbidden(tmp_path):
    """A symptom with several failing states (examples of its group and cause from other
    histories) folds only when the fix forbids each of them, up to FOLD_STATES: a fix that
    forbids its example's state but not another's does not remove the failure."""
    trace, late = _trace(tmp_path), _trace(tmp_path, late=True)
    loses_a, loses_b = _finding(trace, keep=64), _finding(trace, keep=0)
    cp = next(p for p in Simulator.from_trace(late).crash_points() if p.kind == "fence")
    assert [u.line - late.pool_base for u in cp.units] == [0, 64, 128]
    loses_b_late = Finding("invariant-violation", "rule broken", ("invariant-violation", "rule: check at a.c:99"),
                           point=cp, choice=(1, 0, 1))
    loses_b_late.needed, loses_b_late.shrunk = [cp.units[2].pieces[0]], True
    assert bugs.lost_cause(late, loses_b_late) == bugs.lost_cause(trace, loses_b) == ("a.c:20",)
    _fix(loses_a, Edit("commit", "a.c:11"))
    examples = [(loses_a, trace), (loses_b, trace)]
    # its example's state and a second one the commit also forbids (the same history again): folded
    again = _finding(trace, keep=0)
    alike = {id(loses_b): [(loses_b, trace), (again, trace)]}
    fold_by_states(ModelOptions(), examples, float("inf"), alike)
    assert loses_b.removed_by == [bugs.fix_key(loses_a)]
    # a second state the commit does not forbid (the line written after the swing): not folded
    loses_b.removed_by = []
    alike = {id(loses_b): [(loses_b, trace), (again, trace), (loses_b_late, late)]}
    fold_by_states(ModelOptions(), examples, float("inf"), alike)
    assert loses_b.removed_by == []
    # no more than FOLD_STATES are asked: a fourth state is not
    alike = {id(loses_b): [(loses_b, trace), (again, trace), (_finding(trace, keep=0), trace), (loses_b_late, late)]}
    fold_by_states(ModelOptions(), examples, float("inf"), alike)
    assert loses_b.removed_by == [bugs.fix_key(loses_a)]

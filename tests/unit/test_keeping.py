"""The crash states a known bug explains are never executed (crashcheck/crashsim/keeping.py,
harness/check/unmask.py Explainer.kept): on tiny traces, the exact states explored and left out.

The trace: operation 0 stores at a.c:10 (line 0), then b.c:20 (line 64), then a.c:30 (line 0 again,
after a.c:10 in the line's order), none flushed, then publishes them with a flushed and fenced
link. At op_end the line-0 unit chooses 0..2 pieces kept (a.c:10 first), the line-64 unit 0..1.
"""
import itertools

from crashcheck.crashsim.explore import explore
from crashcheck.crashsim.keeping import KeptPoint, keeping
from crashcheck.crashsim.lazy import LazyPlan
from crashcheck.crashsim.persistency import ModelOptions
from crashcheck.crashsim.simulate import Simulator
from crashcheck.harness.check.fix_search import Edit
from crashcheck.harness.check.unmask import Explainer, Known
from published_trace import published


def _trace(tmp_path, memcpy=False):
    return published(tmp_path, [("a.c", 10, 0, b"a" * (16 if memcpy else 8), "memcpy" if memcpy else "plain"),
                                ("b.c", 20, 64, b"b" * 8, "plain"), ("a.c", 30, 32, b"c" * 8, "plain")])


def _op_end(sim):
    return next(p for p in sim.crash_points() if p.kind == "op_end")


def test_a_point_keeps_the_states_that_keep_the_pieces_asked_for(tmp_path):
    trace = _trace(tmp_path)
    cp = _op_end(Simulator.from_trace(trace))
    assert [u.line - trace.pool_base for u in cp.units] == [0, 64] and cp.legal == 6
    a10 = cp.units[0].pieces[0]
    kp = keeping(cp, {a10.id})
    assert isinstance(kp, KeptPoint) and kp.whole is cp
    assert kp.legal == 4 and kp.pruned == 2
    kept = {kp.whole_choice(c) for c in itertools.product(*(range(u.choices) for u in kp.units))}
    # every state but those that lose a.c:10 (line 0 keeps none of its two pieces)
    assert kept == {(1, 0), (1, 1), (2, 0), (2, 1)}
    assert all(a10 in kp.whole.kept(c) for c in kept)
    # keeping a.c:30 (the line's second piece) keeps the whole line
    c30 = cp.units[0].pieces[1]
    assert {keeping(cp, {c30.id}).whole_choice(c) for c in [(0, 0), (0, 1)]} == {(2, 0), (2, 1)}
    assert keeping(cp, set()) is None and keeping(cp, {10 ** 6}) is None


def test_an_unordered_unit_keeps_the_subsets_that_hold_the_piece(tmp_path):
    trace = _trace(tmp_path, memcpy=True)
    cp = _op_end(Simulator.from_trace(trace))
    u = cp.units[0]
    assert u.orders is not None and len(u.pieces) == 3        # a memcpy's two pieces, then a.c:30
    second = u.pieces[1]
    kp = keeping(cp, {second.id})
    allowed = {k for k in range(u.choices) if 1 in u.orders[k]}
    assert set(kp.to_whole[0]) == allowed and kp.pruned == (u.choices - len(allowed)) * 2
    assert all(second in u.kept(k) for k in allowed)


def test_explore_runs_only_the_kept_states_and_names_them_in_the_whole_point(tmp_path):
    trace = _trace(tmp_path)
    a10 = next(p.id for p in _op_end(Simulator.from_trace(trace)).units[0].pieces)
    outs = [o for o in explore(trace, strategy="exhaustive", keep=lambda cp: keeping(cp, {a10}))
            if o.point.kind == "op_end"]
    assert {o.choice for o in outs} == {(1, 0), (1, 1), (2, 0), (2, 1)}
    assert all(not isinstance(o.point, KeptPoint) and o.point.legal == 6 for o in outs)


def test_a_known_one_line_bug_or_its_fix_prunes_the_states_it_explains(tmp_path):
    trace = _trace(tmp_path)
    opts = ModelOptions()
    cp = _op_end(Simulator.from_trace(trace))
    by_cause = Known()
    by_cause.add(("a.c:10",))
    by_fix = Known()
    by_fix.add((), "flush a.c:10", (Edit("persist-after", "a.c:10"),))
    for known in (by_cause, by_fix):
        ex = Explainer(known, trace, opts)
        kp = ex.kept(cp)
        kept = {kp.whole_choice(c) for c in itertools.product(*(range(u.choices) for u in kp.units))}
        assert kept == {(1, 0), (1, 1), (2, 0), (2, 1)} and kp.pruned == 2
        # what is pruned is exactly what `explains` says a known bug explains
        every = set(itertools.product(range(3), range(2)))
        assert {c for c in every if ex.explains(cp, c)} == every - kept
    # a cause of two lines is not a product of choices: its states are executed and judged
    both = Known()
    both.add(("a.c:10", "b.c:20"))
    assert Explainer(both, trace, opts).kept(cp) is None


def test_the_lazy_plan_of_a_kept_point_has_only_its_variants(tmp_path):
    trace = _trace(tmp_path)
    sim = Simulator.from_trace(trace)
    cp = _op_end(sim)
    cache: dict = {}
    whole = LazyPlan(cp, sim.image, cache)
    assert [len(v) for v in whole.contents.values()] == [3, 2]
    kp = keeping(cp, {cp.units[0].pieces[0].id})
    # (the same pieces in the contents cache: the restricted point must not get the whole's)
    assert [len(v) for v in LazyPlan(kp, sim.image, cache).contents.values()] == [2, 2]

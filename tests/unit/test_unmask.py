"""Which failing crash states a known bug explains (harness/check/unmask.py), on a trace of two
bugs: operation 0 stores a value at a.c:10 and another at a.c:20, neither flushed (two bugs), then
publishes them with a flushed and fenced link. A state that loses a.c:10 is bug A's (its proven fix
forbids it, or it loses A's minimal lost stores); one that keeps a.c:10 and loses a.c:20 is B's,
which A's knowledge must leave to be found."""
from crashcheck.crashsim.persistency import ModelOptions
from crashcheck.crashsim.simulate import Simulator
from crashcheck.harness.check.fix_search import Edit
from crashcheck.harness.check.unmask import Explainer, Known
from published_trace import published


def _trace(tmp_path):
    return published(tmp_path, [("a.c", 10, 0, b"a" * 8, "plain"), ("a.c", 20, 64, b"b" * 8, "plain")])


def _states(trace):
    """The op_end point and, by what they lose, its states: {'a', 'b', 'ab', ''} -> choice."""
    cp = next(p for p in Simulator.from_trace(trace).crash_points() if p.kind == "op_end")
    lines = [u.line - trace.pool_base for u in cp.units]
    assert lines == [0, 64]
    return cp, {"ab": (0, 0), "a": (0, 1), "b": (1, 0), "": (1, 1)}


def test_a_proven_fix_explains_the_states_it_forbids_only(tmp_path):
    trace = _trace(tmp_path)
    cp, st = _states(trace)
    known = Known()
    known.add((), "flush a.c:10", (Edit("persist-after", "a.c:10"),))
    ex = Explainer(known, trace, ModelOptions())
    assert ex.explains(cp, st["a"]) and ex.explains(cp, st["ab"])
    assert not ex.explains(cp, st["b"]) and not ex.explains(cp, st[""])


def test_a_known_lost_store_set_explains_the_states_that_lose_it(tmp_path):
    trace = _trace(tmp_path)
    cp, st = _states(trace)
    known = Known()
    known.add(("a.c:10",))
    ex = Explainer(known, trace, ModelOptions())
    assert ex.explains(cp, st["a"]) and ex.explains(cp, st["ab"])
    assert not ex.explains(cp, st["b"])
    both = Known()
    both.add(("a.c:10", "a.c:20"))
    assert not Explainer(both, trace, ModelOptions()).explains(cp, st["a"])
    assert not Known() and known

"""The fix searches after a search's batches (harness/run/after_batches.py) leave out the failing
states of the other bugs no fix is proven for (issue 48: "where no fix is proven, exclude the
crash states explained by the known bug's lost stores"). On test_unmask's trace of two bugs (a.c:10
and a.c:20 stored unflushed, then published): bug A's candidate fix (persist a.c:10) still leaves
the state that loses a.c:20 failing, B's the state that loses a.c:10; each is proven only when the
other's states are left out. The checker is a stand-in whose search judges that one state with the
real Explainer (harness/check/unmask.py)."""
from types import SimpleNamespace

from test_unmask import _states, _trace

from crashcheck.crashsim.persistency import ModelOptions
from crashcheck.harness.check.fix_search import Edit, FixResult, describe
from crashcheck.harness.check.unmask import Explainer, others
from crashcheck.harness.run.after_batches import SHRUNK, AfterBatches

FIX = {"a.c:10": (Edit("persist-after", "a.c:10"),), "a.c:20": (Edit("persist-after", "a.c:20"),)}
STATE_LEFT = {"a.c:10": "b", "a.c:20": "a"}      # the state a bug's fix leaves failing: the other's


class Stand:
    """Checker.fix_finding as the search would answer on this trace; the calls it got."""
    def __init__(self, trace):
        self.trace, self.calls, self.known_fixes = trace, [], {}
        self.budget = SimpleNamespace(expired=lambda: False)

    def likely_fix(self, outcome, f):
        return ()

    def fix_finding(self, outcome, f, hints=(), found=None, known=None):
        mine = f.name
        self.calls.append((mine, known))
        cp, st = _states(self.trace)
        left = st[STATE_LEFT[mine]]
        other = FIX["a.c:20" if mine == "a.c:10" else "a.c:10"]
        ok = (found is not None or other in self.known_fixes.values()         # the other's fix applied
              or (known is not None and Explainer(known, self.trace, ModelOptions()).explains(cp, left)))
        f.fix = FixResult(edits=FIX[mine]) if ok else FixResult(reason="a state still fails")
        if ok:
            self.known_fixes[describe(f.fix.edits)] = f.fix.edits


def _entry(trace, name, seq, at):
    f = SimpleNamespace(name=name, shrunk=True, cls="lost-durable-write", point=object(), recovery_of=None,
                        lost=[SimpleNamespace(seq=seq, part=0)], expected=False, removed_by=[], fix=None)
    return SimpleNamespace(finding=f, outcome=SimpleNamespace(trace=trace), found_at=(at, 0), state_shrink=SHRUNK)


def _search(trace, entries):
    s = AfterBatches()
    s.checker, s.registry = Stand(trace), {e.finding.name: e for e in entries}
    s.budget = SimpleNamespace(expired=lambda: False)
    s._search_fixes(lambda: False)
    return s.checker.calls


def test_each_bugs_fix_is_searched_with_the_others_states_left_out(tmp_path):
    trace = _trace(tmp_path)
    seq = sorted(i for i, ev in enumerate(trace.events) if ev.kind == "store")
    a, b = _entry(trace, "a.c:10", seq[0], 0), _entry(trace, "a.c:20", seq[1], 1)
    calls = _search(trace, [a, b])
    # first each alone (fails: the other's state), then A without B's states (proven), then B
    # again with A's fix applied
    assert [(name, k.lost if k else None) for name, k in calls] == [
        ("a.c:10", None), ("a.c:20", None), ("a.c:10", [frozenset({"a.c:20"})]), ("a.c:20", None)]
    assert a.finding.fix.edits == FIX["a.c:10"] and b.finding.fix.edits == FIX["a.c:20"]


def test_a_bug_whose_fix_is_proven_is_not_left_out_and_nor_is_ones_own(tmp_path):
    trace = _trace(tmp_path)
    seq = sorted(i for i, ev in enumerate(trace.events) if ev.kind == "store")
    a, b = _entry(trace, "a.c:10", seq[0], 0), _entry(trace, "a.c:20", seq[1], 1)
    b.finding.fix = FixResult(edits=FIX["a.c:20"])          # B's fix found while exploring
    calls = _search(trace, [a, b])
    assert all(known is None for _, known in calls)        # B's fix is applied, not its states left out
    # a cause inside one's own is never left out (it would leave out one's own states)
    assert others([("a.c:10",), ("a.c:10", "a.c:20"), ()], ("a.c:10", "a.c:30")).lost == [
        frozenset({"a.c:10", "a.c:20"})]


def test_the_checker_hands_the_bugs_to_leave_out_to_its_fix_search(monkeypatch):
    """Checker.fix_finding passes KNOWN (the other bugs' states to leave out) to the search,
    with a fix of another bug already proven too: its list of proven fixes once took KNOWN's
    name, so the search got that list (nothing left out without a proven fix; with one, the
    Explainer died on it: wort's many gate ended in an internal error)."""
    from crashcheck.harness.check import checker_fixes
    got = []
    monkeypatch.setattr(checker_fixes, "about_ordering", lambda f: True)
    monkeypatch.setattr(checker_fixes, "prove", lambda *a, **k: False)     # the proven fix alone does not do
    monkeypatch.setattr(checker_fixes, "search_fix", lambda *a, **k: got.append(k["known"]) or FixResult(reason="-"))
    stand = SimpleNamespace(settings=SimpleNamespace(fixes=True), budget=SimpleNamespace(expired=lambda: False),
                            trace=lambda ops: (None, []), oracle=lambda *a: None, session=None,
                            known_fixes={"x": FIX["a.c:20"]})
    outcome = SimpleNamespace(ops=[], trace=object(), followup=None)
    known = others([("a.c:20",)], ("a.c:10",))
    checker_fixes.CheckerFixes.fix_finding(stand, outcome, SimpleNamespace(lost=[]), known=known)
    assert got == [known]

"""A leak shown beside a crash's failure is that failure's symptom only when persisting the stores
the failure's state lost removes it (harness/check/leak_apart.py, issue 48: a symptom is folded
into a bug only when that bug's fix removes it); one still there is a finding of its own, and
the run keeps it as an example of its own group (harness/run/after_batches.py _keep_apart)."""
from dataclasses import dataclass

from crashcheck.harness.check import leak_apart
from crashcheck.harness.check.findings import Finding
from crashcheck.harness.run.after_batches import AfterBatches
from crashcheck.harness.run.results import Entry


@dataclass
class P:
    seq: int


class Point:
    """A crash point with one unit of three pending pieces: choice k keeps the first k."""
    index = 7
    radices = [3]
    pieces = [P(1), P(2), P(3)]

    def lost(self, choice):
        return self.pieces[choice[0]:]

    def follow_text(self):
        return ""


class Oracle:
    def follow_text(self, cp):
        return ""


class Session:
    def free_state_id(self):
        return 0


def _failure_with_leak(leak_group: str) -> Finding:
    f = Finding("lost-durable-write", "key 1 missing", ("lost-durable-write", "tree.c:81"), point=Point(), choice=(1,))
    f.symptoms = [Finding("leak", "1 object leaked", ("leak", leak_group), point=f.point, choice=(1,)),
                  Finding("wrong-value", "key 2 holds 0", ("wrong-value", "tree.c:90"), point=f.point, choice=(1,))]
    return f


def _judged(monkeypatch, still: list[str]):
    """leak_apart with the state's check faked: the state that keeps every piece leaks STILL."""
    checked = []

    def state_checker(session, trace, index, follow):
        def check(choices):
            checked.extend(choices)
            return ["result"] * len(choices)
        return check

    class Judge:
        def __init__(self, *args):
            pass

        def judge(self, out):
            assert out.choice == (3,) and out.result == "result"
            return [Finding("leak", "leaked", ("leak", g), point=out.point, choice=out.choice) for g in still]
    monkeypatch.setattr(leak_apart, "state_checker", state_checker)
    monkeypatch.setattr(leak_apart, "HistoryJudge", Judge)
    return checked


def test_a_leak_still_there_with_the_lost_stores_persisted_is_apart(monkeypatch):
    checked = _judged(monkeypatch, still=["tree.c:35"])
    f = _failure_with_leak("tree.c:35")
    apart = leak_apart.leaks_apart(Session(), None, Oracle(), f)
    assert checked == [(3,)]                       # the same crash point, every lost store persisted
    assert [(g.cls, g.group, g.choice, g.lost) for g in apart] == [("leak", ("leak", "tree.c:35"), (3,), [])]
    assert [s.group for s in f.symptoms] == [("wrong-value", "tree.c:90")]


def test_a_leak_the_lost_stores_explain_stays_a_symptom(monkeypatch):
    _judged(monkeypatch, still=[])
    f = _failure_with_leak("tree.c:35")
    assert leak_apart.leaks_apart(Session(), None, Oracle(), f) == []
    assert [s.cls for s in f.symptoms] == ["leak", "wrong-value"]
    # a state that lost nothing has no stores to persist: nothing is checked
    checked = _judged(monkeypatch, still=["tree.c:35"])
    f = _failure_with_leak("tree.c:35")
    f.choice = (3,)
    assert leak_apart.leaks_apart(Session(), None, Oracle(), f) == [] and checked == []


def test_the_run_keeps_a_leak_apart_as_an_example_of_its_own():
    f = _failure_with_leak("tree.c:35")
    leak = f.symptoms.pop(0)
    f.apart = [leak]
    entry = Entry(f.group, (2, 10), object(), f, 1, 0.5, ((2, 10), 1, 0), (1, 0))

    class Search(AfterBatches):
        registry = {f.group: entry}
    s = Search()
    s._keep_apart(entry)
    assert s.registry[leak.group].finding is leak and s.registry[leak.group].outcome is entry.outcome
    # a group the run has an example of already keeps it
    other = Entry(leak.group, (1, 5), object(), leak, 1, 0.1, ((1, 5), 0, 0), (0, 0))
    s.registry = {f.group: entry, leak.group: other}
    s._keep_apart(entry)
    assert s.registry[leak.group] is other

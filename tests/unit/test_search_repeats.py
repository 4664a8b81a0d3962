"""A history drawn again after a clean check is answered from that check (harness/run/search.py
`clean`): Hypothesis starts every batch with its simplest example, the same history each time, and
a structure's capacity history there cost Heart's threaded runs 4 s per batch."""
from __future__ import annotations

from hypothesis import strategies as st

from crashcheck.harness.check.findings import HistoryOutcome
from crashcheck.harness.core.budget import Budget
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.run import search as search_mod
from crashcheck.harness.run.config import Config
from crashcheck.specs.ordered_map import Op
from search_fakes import FakeChecker


class _Checker(FakeChecker):
    """Checks nothing: every history is clean; counts the checks of each history."""
    checks: list[str] = []

    def check(self, ops, crashes=True, **k) -> HistoryOutcome:
        _Checker.checks.append(repr(list(ops)))
        return HistoryOutcome(ops, [], object(), [], self.model)   # (a trace: never read here)


def _run(monkeypatch, strategy, examples: int):
    _Checker.checks = []
    monkeypatch.setattr(search_mod, "Checker", _Checker)
    monkeypatch.setattr(search_mod.capacity, "observe", lambda *a, **k: [])
    monkeypatch.setattr(search_mod.strategies, "for_target", lambda *a, **k: strategy)
    s = search_mod.Search("wort", None, Settings(seed=1), Config(examples=examples, budget=None), 0,
                          Budget(None), bugdir=None)
    return s.run()


def test_a_history_checked_clean_is_not_checked_again_in_a_later_batch(monkeypatch):
    one = [Op("insert", (5).to_bytes(8, "big"), (1).to_bytes(8, "little"))]
    res = _run(monkeypatch, st.just(one), examples=24)      # three batches, one history each
    assert len(_Checker.checks) == 1
    assert res.stats.histories == 3 and res.stats.repeated == 2


def test_different_histories_are_each_checked(monkeypatch):
    res = _run(monkeypatch, st.integers(1, 10 ** 6).map(
        lambda v: [Op("insert", v.to_bytes(8, "big"), (1).to_bytes(8, "little"))]), examples=16)
    assert res.stats.histories == 16
    assert len(_Checker.checks) == 16 - res.stats.repeated
    assert len(set(_Checker.checks)) == len(_Checker.checks)      # none checked twice

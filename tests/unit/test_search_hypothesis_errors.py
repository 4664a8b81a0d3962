"""Errors out of Hypothesis never leave the run (issue 49 point 2): a group of several failures
(Hypothesis's final replay catches everything, our OutOfTime included), Flaky, Unsatisfiable,
DeadlineExceeded. The search keeps what it found, the budget running out inside a replay or a
probe is the budget running out, and an internal error is recorded, never raised past the
search. A run once ended in `BaseExceptionGroup: Hypothesis found 2 distinct failures` (one of
them OutOfTime from determinism_probes.py `_again`): exit 1 and only the journal written."""
from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import strategies as st
from hypothesis.errors import DeadlineExceeded, FlakyFailure, Unsatisfiable

from crashcheck.harness.check.findings import Finding, HistoryOutcome
from crashcheck.harness.core.budget import Budget, OutOfTime
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.run import search as search_mod
from crashcheck.harness.run.config import Config
from crashcheck.harness.run.found import FOUND, Abort, ShrinkSpent, batch_end
from crashcheck.specs.ordered_map import Op
from search_fakes import FakeChecker


class _Checker(FakeChecker):
    """Every history with an odd key shows a leak, every other one a lost durable write (two
    distinct failures for Hypothesis); RAISE, when set, is raised by checks of the history
    tried after the first failure was found."""
    failing = None       # (exception, which check raises it)
    checks = 0

    def check(self, ops, crashes=True, **k) -> HistoryOutcome:
        _Checker.checks += 1
        if _Checker.failing is not None and _Checker.checks >= _Checker.failing[1]:
            raise _Checker.failing[0]
        cls = "leak" if int.from_bytes(ops[0].key, "big") % 2 else "lost-durable-write"
        f = Finding(cls, f"{cls} here", (cls, "site.c:1"))
        return HistoryOutcome(ops, [], None, [f], self.model)

    def trace(self, ops):
        raise OutOfTime()     # a probe run out of budget


def _search(monkeypatch, failing=None):
    _Checker.failing, _Checker.checks = failing, 0
    monkeypatch.setattr(search_mod, "Checker", _Checker)
    monkeypatch.setattr(search_mod.capacity, "observe", lambda *a, **k: [])
    monkeypatch.setattr(search_mod.strategies, "for_target", lambda *a, **k: st.integers(1, 1000).map(
        lambda v: [Op("insert", v.to_bytes(8, "big"), (1).to_bytes(8, "little"))]))
    return search_mod.Search("wort", None, Settings(seed=1), Config(examples=8, budget=None, shrink_calls=10_000), 0,
                             Budget(None), bugdir=None)


def _replayed_as(monkeypatch, ending):
    """Hypothesis as it ends a batch whose final replay met ENDING(found) (what it raises after
    collecting what each of its failures' replays raised): the property runs on two histories,
    then the group is raised."""
    def given(strategy):
        def deco(prop):
            def test():
                raised = []
                for v in (2, 3):
                    try:
                        prop([Op("insert", v.to_bytes(8, "big"), (1).to_bytes(8, "little"))])
                    except BaseException as exc:     # noqa: BLE001 - as Hypothesis's replay does
                        raised.append(exc)
                raise ending(raised)
            return test
        return deco
    monkeypatch.setattr(search_mod, "given", given)


def test_out_of_time_in_the_final_replay_is_the_budget_running_out(monkeypatch):
    """The issue's run: `BaseExceptionGroup: Hypothesis found 2 distinct failures`, one of them
    OutOfTime from `_again`."""
    s = _search(monkeypatch)
    _replayed_as(monkeypatch, lambda raised: BaseExceptionGroup("Hypothesis found 2 distinct failures",
                                                                [raised[0], OutOfTime()]))
    res = s.run()
    assert res.error is None and res.interrupted is None
    assert {e.finding.cls for e in res.entries} == {"leak", "lost-durable-write"}
    assert not any("Hypothesis" in w for w in res.warnings)
    assert s.budget is not None and len([b for b in s.batch_shrink]) == 1, "the search ended at the first batch"


def test_flaky_and_unsatisfiable_are_warnings_and_the_findings_kept(monkeypatch):
    s = _search(monkeypatch)
    _replayed_as(monkeypatch, lambda raised: BaseExceptionGroup("two", [
        FlakyFailure("Hypothesis prop produces unreliable results", [raised[0]]), Unsatisfiable("no examples")]))
    res = s.run()
    assert res.error is None
    assert {e.finding.cls for e in res.entries} == {"leak", "lost-durable-write"}
    assert any("FlakyFailure" in w for w in res.warnings) and any("Unsatisfiable" in w for w in res.warnings)


def test_an_internal_error_in_a_group_is_recorded_never_raised(monkeypatch):
    s = _search(monkeypatch)
    _replayed_as(monkeypatch, lambda raised: BaseExceptionGroup("two", [OutOfTime(), ZeroDivisionError("ours")]))
    res = s.run()
    assert res.error is not None and "ZeroDivisionError: ours" in res.error
    assert {e.finding.cls for e in res.entries} == {"leak", "lost-durable-write"}


def test_an_internal_error_beside_findings_is_recorded_and_the_findings_kept(monkeypatch):
    s = _search(monkeypatch, failing=(OverflowError("int too large to convert to float"), 3))
    res = s.run()
    assert res.error is not None and "OverflowError: int too large" in res.error
    assert res.entries, "the findings before the error are kept"
    assert _Checker.checks == 3, "an internal error ends the search at once: Hypothesis never shrinks it"


def test_batch_end_sorts_every_leaf_of_a_group():
    found = FOUND["lost-durable-write"]("key 1 is missing")
    end = batch_end(BaseExceptionGroup("Hypothesis found 2 distinct failures", [found, OutOfTime()]))
    assert end.out_of_time and not end.warnings
    end = batch_end(BaseExceptionGroup("two", [found, ShrinkSpent()]))
    assert end.shrink_spent and not end.out_of_time
    # a replay cut by the budget is not "flaky"
    assert batch_end(FlakyFailure("unreliable", [OutOfTime()])).warnings == []
    for exc in (Unsatisfiable("could not find any examples"), DeadlineExceeded(timedelta(seconds=2), timedelta(seconds=1))):
        [warning] = batch_end(BaseExceptionGroup("two", [found, exc])).warnings
        assert type(exc).__name__ in warning and "what was found is kept" in warning
    with pytest.raises(KeyboardInterrupt):
        batch_end(BaseExceptionGroup("two", [found, KeyboardInterrupt()]))
    with pytest.raises(Abort):
        batch_end(BaseExceptionGroup("two", [found, Abort(ValueError("x"))]))
    with pytest.raises(ValueError, match="an internal error"):
        batch_end(BaseExceptionGroup("two", [OutOfTime(), FlakyFailure("f", [ValueError("an internal error")])]))


def test_a_full_disk_inside_a_check_is_the_one_line_set_up_error(monkeypatch):
    import errno
    from crashcheck.harness.core.errors import SetupError
    s = _search(monkeypatch, failing=(OSError(errno.ENOSPC, "No space left on device"), 2))
    with pytest.raises(SetupError, match="is full"):
        s.run()
    assert _Checker.checks == 2


def test_the_command_ends_with_its_results_written_and_the_bugs_exit_status(monkeypatch, tmp_path, trees_built):
    """The issue's command, its Hypothesis group faked: exit 1 (bugs found), the results file and
    both records written, no traceback."""
    import contextlib
    import io
    import json

    from crashcheck.harness.cli.main import main
    _search(monkeypatch)
    _replayed_as(monkeypatch, lambda raised: BaseExceptionGroup("Hypothesis found 2 distinct failures",
                                                                [raised[0], OutOfTime()]))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["fuzz", "wort", "--examples", "8", "--seed", "1", "--jobs", "1", "--no-fix", "--quiet",
                     "--json", str(tmp_path / "perf.json")])
    assert code == 1 and "Traceback" not in err.getvalue(), err.getvalue()
    results = json.loads((tmp_path / "perf.json").read_text())
    assert sorted(b["class"] for b in results["bugs"]) == ["leak", "lost-durable-write"]
    assert len(list((tmp_path / "perf.bugs").glob("*.json"))) == 2

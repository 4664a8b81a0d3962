"""The run room's parts, without fuzzing anything (a stand-in Search): every run goes through an
executor (this process too), the one merge decides which targets a run reports, and the typed
results add up the way the results file says (harness/run/plan.py, merge.py, results.py).
"""
from __future__ import annotations

import json
from dataclasses import fields
from types import SimpleNamespace

import pytest

from crashcheck.harness.core.settings import Settings
from crashcheck.harness.run import batch, executors, plan
from crashcheck.harness.run.config import Config
from crashcheck.harness.run.executor_choice import from_args
from crashcheck.harness.run.journal import Journal
from crashcheck.harness.run.results import TOTAL_LEAVES_OUT, Progress, Results, Stats, TargetResult

SETTINGS = Settings(seed=1)


class _FakeSearch:
    """Search as fuzz_batch makes it: finds nothing, counts one history per share, and ends the
    way ENDINGS[(structure, share)] says (an error or a signal), if it says."""
    endings: dict = {}
    made: list = []

    def __init__(self, structure, bug, settings, config, share, budget, bugdir, journal, progress):
        self.structure, self.bug, self.share, self.progress = structure, bug, share, progress
        _FakeSearch.made.append((structure, share))

    def run(self) -> TargetResult:
        if self.progress:
            self.progress(Progress(self.structure, self.bug, histories=1, states=5, bugs=self.share, elapsed=1.0))
        how = _FakeSearch.endings.get((self.structure, self.share), {})
        return TargetResult(self.structure, self.bug, Stats(histories=1, states_explored=5, elapsed_s=1.0), **how)


@pytest.fixture
def fake_search(monkeypatch):
    _FakeSearch.endings, _FakeSearch.made = {}, []
    monkeypatch.setattr(batch, "Search", _FakeSearch)
    return _FakeSearch


def _plan(*names: str) -> plan.Plan:
    return [(name, None, SETTINGS, Config(examples=8, budget=None)) for name in names]


def test_one_process_runs_through_an_executor_and_journals_each_target_once(fake_search, tmp_path):
    assert isinstance(from_args(1, None), executors.InProcess)
    journal = Journal(tmp_path / "run.journal")
    journal.start({})
    seen: list[Progress] = []
    results = plan.run_plan(_plan("wort", "hart"), seen.append, tmp_path / "bugs", journal)
    assert isinstance(results, Results) and [r.structure for r in results.targets] == ["wort", "hart"]
    assert fake_search.made == [("wort", 0), ("hart", 0)]
    done = [json.loads(line)["done"] for line in journal.path.read_text().splitlines()[1:]]
    assert [(d["structure"], d["stats"]["histories"]) for d in done] == [("wort", 1), ("hart", 1)]
    assert [p.structure for p in seen] == ["wort", "hart"]


def test_in_one_process_targets_after_an_internal_error_or_a_signal_stay_out(fake_search, tmp_path):
    for ending in ({"error": "Traceback: boom"}, {"interrupted": "SIGINT"}):
        fake_search.endings = {("hart", 0): ending}
        fake_search.made = []
        results = plan.run_plan(_plan("wort", "hart", "woart"), None, tmp_path / "bugs")
        assert fake_search.made == [("wort", 0), ("hart", 0)]          # woart never started
        assert [r.structure for r in results.targets] == ["wort", "hart"]
        assert results.targets[0].complete and not results.targets[1].complete
        assert results.error == ending.get("error") and results.interrupted == ending.get("interrupted")


class _Shares:
    """An executor that cuts every target into two shares and reports what RAN, INTERRUPTED and
    ERROR say (as local workers or Dask would after a failure or a stop)."""
    slots = 2

    def __init__(self, ran: int, interrupted=None, error=None) -> None:
        self.ran, self.interrupted, self.error = ran, interrupted, error

    def shares(self, config) -> int:
        return 2

    def journal(self, journal):
        return journal

    def build(self, build_id, structure, bug) -> str:
        return ""

    def run(self, units, on_progress=None):
        parts = [(u, batch.fuzz_batch(u, progress=None)) for u in units[:self.ran]]
        return parts, units[self.ran:], self.interrupted, self.error


@pytest.mark.parametrize("interrupted, error, want", [
    ("SIGTERM", None, [("wort", "SIGTERM", None)]),                    # a stop: unstarted targets stay out
    (None, "worker died", [("wort", None, "worker died"), ("hart", None, "worker died")]),
])
def test_an_executors_ending_decides_the_unstarted_targets(fake_search, tmp_path, interrupted, error, want):
    results = plan.run_plan(_plan("wort", "hart"), None, tmp_path / "bugs", None, _Shares(1, interrupted, error))
    assert [(r.structure, r.interrupted, r.error) for r in results.targets] == want
    assert results.targets[0].stats.histories == 1                      # the one share that came back


def test_shares_of_a_target_merge_into_one(fake_search, tmp_path):
    seen: list[Progress] = []

    class Both(_Shares):
        def run(self, units, on_progress=None):
            parts = []
            for i, u in enumerate(units):
                parts.append((u, batch.fuzz_batch(u, progress=lambda p, i=i: on_progress(i, p))))
            return parts, [], None, None
    [wort] = plan.run_plan(_plan("wort"), seen.append, tmp_path / "bugs", None, Both(2)).targets
    assert wort.stats.histories == 2 and wort.stats.elapsed_s == 1.0 and wort.complete
    # progress: the shares' latest reports added up, bugs the most any share has
    assert (seen[-1].histories, seen[-1].states, seen[-1].bugs) == (2, 10, 1)


def test_stats_count_every_field_a_history_has():
    outcome = SimpleNamespace(partial=True, crash_points=3, states_legal=2 ** 60, states_explored=7,
                              states_checked=4, points_sampled=1, executions=5, hung_short=2, not_checked=True,
                              aimed_runs=3, race_candidates=4, race_aims=2, race_confirmed=1, race_unreachable=1,
                              race_s=0.25, explained=6, pruned=2 ** 70)
    s = Stats()
    s.count(outcome)
    s.count(outcome)
    counted = {name: getattr(s, name) for name in Stats.counts()}
    assert counted == {"histories": 2, "partial_histories": 2, "crash_points": 6, "states_legal": 2 ** 61,
                       "states_explored": 14, "states_checked": 8, "points_sampled": 2, "executions": 10,
                       "hung_short": 4, "not_checked": 2, "repeated": 0, "aimed_runs": 6,
                       "race_candidates": 8, "race_aims": 4, "race_confirmed": 2, "race_unreachable": 2,
                       "race_s": 0.5, "explained_states": 12, "states_pruned": 2 ** 71,
                       # (the crossing histories' share, which the search adds itself: harness/run/crossing.py)
                       "capacity_histories": 0, "capacity_s": 0}
    other = Stats(histories=1, threads=3, elapsed_s=9.0)
    s.add(other)
    assert (s.histories, s.threads, s.elapsed_s) == (3, 3, 9.0)
    out = s.as_json()
    # (the --perf tally is a section of its own in the results file, not a count)
    assert set(out) == {f.name for f in fields(Stats)} - {"perf"} | {"points_complete", "states_per_s", "executions_per_s", "states_covered_per_s"}
    assert out["states_legal"] == str(2 ** 61) and out["points_complete"] == 4
    assert out["states_pruned"] == str(2 ** 71)     # (written as states_legal is: text past 2^53)


def test_the_results_file_totals_targets(tmp_path):
    a = TargetResult("wort", None, Stats(histories=2, crash_points=3, states_explored=10, elapsed_s=1.004))
    b = TargetResult("hart", None, Stats(histories=1, crash_points=1, points_sampled=1, threads=3, elapsed_s=2.0))
    res = Results([a, b], SETTINGS).as_json("crashcheck fuzz wort hart")
    total = res["stats"]
    assert not set(TOTAL_LEAVES_OUT) & set(total)
    assert (total["histories"], total["crash_points"], total["points_complete"], total["elapsed_s"]) == (3, 4, 3, 3.0)
    assert res["complete"] is True and res["interrupted"] is None
    assert [row["stats"]["threads"] for row in res["per_structure"]] == [1, 3]
    b.interrupted = "SIGINT"
    res = Results([a, b], SETTINGS).as_json("")
    assert res["complete"] is False and res["interrupted"] == "SIGINT"
    assert Results([], SETTINGS).as_json("")["complete"] is False


def test_a_results_file_with_counts_past_2_63_reads_back(tmp_path):
    # lazy covers every legal state of a point: states explored grow as the legal count does
    # (HART's 14 histories: about 6e87), and `crashcheck report` must read what fuzz wrote
    from crashcheck.harness.triage.record_formats import check_results
    huge = 6 * 10 ** 87
    a = TargetResult("hart", None, Stats(histories=14, crash_points=9, states_legal=huge, states_explored=huge,
                                         executions=5, elapsed_s=1.0))
    res = json.loads(json.dumps(Results([a], SETTINGS).as_json("crashcheck fuzz hart")))
    checked = check_results(res, str(tmp_path / "r.json"))
    assert int(checked["stats"]["states_explored"]) == huge
    assert int(checked["per_structure"][0]["stats"]["states_explored"]) == huge

"""Verdicts say what was covered, and a trace cut short is never explored up to the cut.

A bounded strategy samples big crash points; such a point must never read as "all states
consistent": each history's coverage counts legal vs explored states per crash point, records
carry it for their crash point, and the run summary and report say when points were sampled.
Uses WORT (built by scripts/setup) and small fixed histories."""
import json

import pytest

from cli_run import run_cli
from crashcheck.crashsim.explore import explore
from crashcheck.crashsim.trace import TraceError, read_trace
from crashcheck.harness.target import structures
from crashcheck.harness.check import traced_run
from crashcheck.harness.check.pipeline import Checker
from crashcheck.harness.core.settings import Settings
from crashcheck.specs import registry
from crashcheck.specs.model import with_load

MAP = registry.get("ordered_map")
HISTORY = [MAP.parse_op(x) for x in ("insert 1 10", "insert 2 20", "update 1 11", "delete 2", "insert 300 30")]
# Small enough to explore in full: the first insert (WORT's root allocation: ~10^7 legal states
# at one point) is a load phase, not crash-checked.
SMALL = with_load([MAP.parse_op(x) for x in ("insert 1 10", "update 1 11", "delete 1")], 1)


@pytest.fixture(scope="module")
def wort():
    s = structures.get("wort")
    s.driver()            # UsageError if the trees are not built
    return s


def _check(wort, history=HISTORY, **kw):
    with Checker(wort, None, Settings(recovery_crashes=0, **kw)) as checker:
        return checker.check(history)


def test_bounded_sampling_is_counted_per_point(wort):
    out = _check(wort, strategy="bounded", limit=1)
    cov = out.coverage
    assert [f for f in out.findings if not f.expected] == [] and cov.crash_points > 0
    assert cov.points_sampled == sum(1 for legal, seen in cov.per_point.values() if seen < legal) > 0
    # the bounded strategy keeps its boundary states (none and all pending stores persisted)
    assert all(min(legal, 2) <= seen <= legal for legal, seen in cov.per_point.values())
    assert cov.states_explored == sum(seen for _, seen in cov.per_point.values()) < cov.states_legal


def test_exhaustive_covers_every_legal_state(wort):
    out = _check(wort, SMALL, strategy="exhaustive")
    cov = out.coverage
    assert [f for f in out.findings if not f.expected] == [] and cov.points_sampled == 0 and not out.partial
    assert all(seen == legal for legal, seen in cov.per_point.values())
    assert cov.states_explored == cov.states_legal > cov.crash_points
    # the same history, bounded to fewer states than some point has: sampled, and counted so
    small = _check(wort, SMALL, strategy="bounded", limit=2)
    assert small.coverage.points_sampled > 0 and small.coverage.crash_points == cov.crash_points


def test_record_carries_its_points_coverage(tmp_path):
    from crashcheck.harness.run.config import Config
    from crashcheck.harness.run.plan import fuzz_target
    r = fuzz_target("wort", "no-flush-link", Settings(seed=1, limit=2, recovery_crashes=0),
                    Config(examples=8, budget=None, stop_on_class="lost-durable-write"), bugdir=tmp_path)
    bugs = [b for b in r.records if b["class"] == "lost-durable-write"]
    assert bugs, [b["class"] for b in r.records]
    cov = bugs[0]["coverage"]
    assert cov is not None and 1 <= cov["explored"] <= cov["legal"]
    assert cov["exhaustive"] == (cov["explored"] == cov["legal"])
    assert r.stats.points_sampled >= 0 and r.stats.as_json()["points_sampled"] == r.stats.points_sampled


def test_summary_and_report_say_when_points_were_sampled(tmp_path):
    out = tmp_path / "r.json"
    html = tmp_path / "r.html"
    res = run_cli("fuzz", "wort", "--examples", "3", "--strategy", "bounded", "--limit", "1", "--seed", "2",
                  "--quiet", "--recovery-crashes", "0", "--json", out, "--report", html)
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads(out.read_text())
    sampled = data["per_structure"][0]["stats"]["points_sampled"]
    assert sampled > 0 and data["stats"]["points_sampled"] == sampled
    points = data["per_structure"][0]["stats"]["crash_points"]
    assert f"coverage: {points - sampled} of {points} crash points covered completely (bounded, limit 1); " \
        f"{sampled} partial" in res.stdout and "not all legal states" in res.stdout
    assert "every legal state" not in res.stdout
    text = html.read_text()
    assert (f"Coverage (bounded, limit 1): {sampled} crash points were covered only in part, so this is "
            "not a proof") in text
    # All points explored in full (a structure small enough for exhaustive exploration): the
    # summary and the report say so. Rendered from the results of the run above, made exhaustive.
    from rich.console import Console
    from crashcheck.harness.cli.fuzz_summary import print_summary
    from crashcheck.harness.render.report import render
    for row in data["per_structure"]:
        row["stats"]["points_sampled"] = 0
    data["stats"]["points_sampled"] = 0
    console = Console(record=True, width=200)
    print_summary(console, data)
    assert "coverage: every legal state of every crash point reached was covered" in console.export_text()
    assert "every legal state of every crash point reached was covered" in render(data)


def test_lazy_run_covers_every_point_and_says_so(tmp_path):
    out = tmp_path / "r.json"
    html = tmp_path / "r.html"
    res = run_cli("fuzz", "wort", "--examples", "3", "--seed", "2", "--strategy", "lazy", "--quiet", "--json", out,
                  "--report", html)
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads(out.read_text())
    assert data["strategy"] == "lazy"
    st = data["per_structure"][0]["stats"]
    # every legal state of every point covered, by far fewer executions than states
    assert st["points_sampled"] == 0 and st["points_complete"] == st["crash_points"] > 0
    assert st["states_explored"] == int(st["states_legal"]) > st["executions"] > 0
    assert (f"coverage: every legal state of every crash point reached was covered ({st['crash_points']} of "
            f"{st['crash_points']} crash points complete, lazy: {st['executions']} executions)") in res.stdout
    assert "Coverage (lazy exploration" in html.read_text()


def test_explore_refuses_a_cut_trace(wort, tmp_path):
    with Checker(wort, None, Settings()) as checker:
        trace, _ = checker.trace(HISTORY)
        for f in trace.path.parent.glob(trace.path.name + "*"):      # the trace and its images
            (tmp_path / f.name).write_bytes(f.read_bytes())
    cut = tmp_path / trace.path.name
    cut.write_bytes(cut.read_bytes()[:-100])         # events are at the end: a cut tail
    short = read_trace(cut)
    assert not short.complete
    with pytest.raises(TraceError, match="cut short"):
        list(explore(short, strategy="bounded", limit=1))
    assert list(explore(short, strategy="bounded", limit=1, allow_cut=True))


def test_a_cut_trace_of_a_normal_run_is_a_finding_not_explored(wort, monkeypatch):
    """The driver ended normally, but the trace it left is cut: exploring it would check the
    crash points before the cut and call the history consistent."""
    real = traced_run.run_supervised

    def cutting(argv, *, env, **kw):
        end = real(argv, env=env, **kw)
        path = env["CRASHCHECK_TRACE"]
        with open(path, "r+b") as f:
            f.truncate(f.seek(0, 2) - 100)
        return end
    monkeypatch.setattr(traced_run, "run_supervised", cutting)
    out = _check(wort)
    assert [f.cls for f in out.findings] == ["operation-crash"]
    assert "trace is cut short" in out.findings[0].detail and out.findings[0].group[1] == "trace cut short"
    assert out.crash_points == 0 and out.states_explored == 0

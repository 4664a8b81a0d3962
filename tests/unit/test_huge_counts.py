"""Counts past any float (issue 49 point 1): a crash point's legal states, states covered and their
rates go through the results file, its schema, the console summary, the progress line, the
HTML report, the pending-lines hint and a hang's words as exact integers, never as floats.
A run once died at `f"{point.legal:.2e}"` (OverflowError) after 88 s of work."""
from __future__ import annotations

import io
import json
from types import SimpleNamespace

import pytest
from rich.console import Console

from crashcheck.harness.check.hangs import hang_words
from crashcheck.harness.check.pending import pending_hint
from crashcheck.harness.cli.fuzz_progress import states_text
from crashcheck.harness.cli.fuzz_summary import print_summary
from crashcheck.harness.core.counts import big, count, exact, for_json, json_int, per_second
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.render.report import render
from crashcheck.harness.run.results import Progress, Results, Stats, TargetResult
from crashcheck.harness.triage.record_formats import COVERAGE, check_results

# (count, how the summary prints it)
HUGE = [pytest.param(n, shown, id=shown) for n, shown in
        [(2 ** 64, "1.84e+19"), (2 ** 1000, "1.07e+301"), (10 ** 400, "1.00e+400"), (10 ** 5000, "1.00e+5000")]]


@pytest.mark.parametrize("n,shown", HUGE)
def test_the_helpers_take_any_count(n, shown):
    assert big(n) == shown
    assert count(for_json(n)) == n and isinstance(for_json(n), str)
    # other counts stay JSON integers while json can write them (Python reads back 4300 digits)
    assert json_int(n) == n if n < 10 ** 4000 else json_int(n) == exact(n)
    assert count(per_second(n, 2.0)) == n // 2


def _results(n: int) -> dict:
    stats = Stats(histories=3, crash_points=2, states_legal=n, states_explored=n - 1, states_checked=40,
                  executions=40, elapsed_s=4.0)
    target = TargetResult("wort", None, stats)
    return Results([target], Settings(strategy="lazy")).as_json("crashcheck fuzz wort")


@pytest.mark.parametrize("n,shown", HUGE)
def test_results_summary_and_report_with_huge_counts(n, shown):
    res = _results(n)
    text = json.dumps(res)             # (json refuses ints of more than 4300 digits)
    back = check_results(json.loads(text), "results.json")
    row = back["per_structure"][0]["stats"]
    assert count(row["states_legal"]) == n and count(row["states_explored"]) == n - 1
    assert row["executions_per_s"] == 10.0
    assert count(row["states_covered_per_s"]) == (n - 1) // 4 and row["states_per_s"] == row["states_covered_per_s"]
    out = io.StringIO()
    print_summary(Console(file=out, width=200), back)
    printed = out.getvalue()
    assert f"of {shown} legal" in printed
    assert f"speed: 10 executions/s, {big((n - 1) // 4)} crash states covered/s" in printed
    html = render(back)
    assert shown in html


@pytest.mark.parametrize("n,shown", HUGE)
def test_progress_line_with_huge_counts(n, shown):
    p = Progress("wort", None, histories=1, states=n, executions=7, points=3, complete=3, elapsed=2.0)
    line = states_text(p, 2.0)
    assert f"covering {shown} crash states" in line and "7 executions (3/s)" in line
    assert big(n // 2) in states_text(Progress("wort", None, states=n, elapsed=2.0), 2.0)


@pytest.mark.parametrize("n,shown", HUGE)
def test_pending_hint_and_hang_words_with_huge_counts(n, shown):
    trace = SimpleNamespace(events=[], line_size=64, site=lambda _: None)
    # one line stored (data, not an allocator's zeroes) and never flushed, holding every state
    unit = SimpleNamespace(kind="line", line=0x1000, choices=n, pieces=[SimpleNamespace(seq=1, data=b"\x01")])
    point = SimpleNamespace(legal=n, event=9, units=[unit])
    hint = pending_hint(trace, point, "`insert 1`")
    assert hint.startswith(shown.replace("e+", "e") + " legal crash states at one crash point (trace event #9")
    hung = SimpleNamespace(states=3, short=0, short_ms=0, history_points=1)
    assert f"hung in 3 of {shown} states" in hang_words(hung, n, 1000)
    assert count(COVERAGE.check({"legal": for_json(n), "explored": for_json(n - 1)}, "coverage")["explored"]) == n - 1


def test_summary_after_an_internal_error_blames_it_not_the_budget():
    """A run that an internal error ended before its first history finished must not read "the
    budget ran out first"."""
    target = TargetResult("wort", None, Stats(), error="Traceback ...\nOverflowError: int too large to convert to float\n")
    res = Results([target], Settings()).as_json("crashcheck fuzz wort")
    res["per_structure"][0]["budget_s"] = 120
    assert res["per_structure"][0]["error"] == "OverflowError: int too large to convert to float"
    out = io.StringIO()
    print_summary(Console(file=out, width=300), res)
    assert "an internal error ended it first: OverflowError: int too large" in out.getvalue()
    assert "budget ran out" not in out.getvalue()

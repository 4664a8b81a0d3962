"""A run says what happened to it: a run that checked no history is never complete and
never exits 0, whoever ran it (this process, --jobs, --dask); a signal that Python could only
swallow (it landed in Hypothesis's gc callback) prints no traceback; and the summary's reason for
a structure with no history is the real one, not "the budget ran out" for a run without a budget.
"""
from __future__ import annotations

import gc
import json
import signal
import subprocess
import sys

import pytest
from cli_run import ROOT, run_cli
from waiting import checker_pids, history_checked, wait_until

from crashcheck.harness.core import budget
from crashcheck.harness.run.results import Results, Stats, TargetResult


@pytest.mark.parametrize("where", [("--jobs", "1"), ("--jobs", "2"), ("--dask", "local:1")],
                         ids=["in-process", "jobs-2", "dask"])
def test_a_run_that_checked_nothing_is_never_complete(where, tmp_path):
    if where[0] == "--dask":
        pytest.importorskip("distributed")
    out = tmp_path / "r.json"
    # The budget counts from the process start: it is spent before the first history is checked.
    res = run_cli("fuzz", "wort", "--budget", "0.01", "--quiet", *where, "--json", out, timeout=180)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    data = json.loads(out.read_text())
    assert data["stats"]["histories"] == 0
    assert data["complete"] is False and data["per_structure"][0]["complete"] is False, data
    assert "no history of wort was checked" in res.stderr
    assert "the budget ran out first" in res.stdout


def _interrupted_in_gc(plan, progress, bugdir, journal, executor):
    """run_plan as a SIGTERM inside Hypothesis's gc callback leaves it: swallowed by Python
    (the pending signal kept), the target stopped before its first history."""
    fired = []

    def callback(phase, info):
        if phase == "start" and not fired:
            fired.append(1)
            budget.interrupt(signal.SIGTERM)
    gc.callbacks.append(callback)
    try:
        gc.collect()
    finally:
        gc.callbacks.remove(callback)
    assert fired
    s, b, settings, _ = plan[0]
    return Results([TargetResult(s, b, Stats(), interrupted=budget.swallowed_signal())], settings)


def test_sigterm_in_a_gc_callback_says_so_in_one_line(tmp_path):
    # In a process of its own: pytest replaces Python's unraisable hook (it would hide the
    # traceback a user saw).
    out = tmp_path / "r.json"
    code = ("import sys; sys.path[:0] = ['tests/e2e', 'tests']; import test_run_endings as t; "
            "from crashcheck.harness.cli import cmd_fuzz; cmd_fuzz.run_plan = t._interrupted_in_gc; "
            "from crashcheck.harness.cli.main import main; "
            f"sys.exit(main(['fuzz', 'wort', '--examples', '4', '--quiet', '--json', {str(out)!r}]))")
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 143, res.stderr
    assert "Traceback" not in res.stderr and "Exception ignored" not in res.stderr, res.stderr
    assert [line for line in res.stderr.splitlines() if line.strip()] == [
        "crashcheck: interrupted (SIGTERM); partial results written"], res.stderr
    data = json.loads(out.read_text())
    assert data["complete"] is False and data["interrupted"] == "SIGTERM"
    # an --examples run has no budget: the summary names what stopped it
    assert "SIGTERM stopped the run before its first history was checked" in res.stdout, res.stdout
    assert "budget" not in res.stdout, res.stdout


def test_sigterm_to_a_worker_alone_never_passes_for_a_whole_run(tmp_path):
    # SIGTERM to one --jobs worker stops every unit (they share the stop); what they found comes
    # back, and the run says it was interrupted instead of claiming complete.
    import os
    work, out = tmp_path / "work", tmp_path / "r.json"
    work.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "crashcheck.harness.cli.main", "fuzz", "wort", "--examples", "2000", "--seed",
                             "3", "--jobs", "2", "--quiet", "--json", str(out)], cwd=ROOT,
                            env=dict(os.environ, CRASHCHECK_WORKDIR=str(work)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_until(history_checked(work, "wort"), "a worker checked a history", proc=proc)
        os.kill(checker_pids(work)[0], signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    data = json.loads(out.read_text())
    assert data["complete"] is False and data["interrupted"] == "SIGTERM", err
    assert proc.returncode == 143 and data["stats"]["histories"] > 0, err

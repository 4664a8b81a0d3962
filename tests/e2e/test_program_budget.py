"""`crashcheck run --budget SECONDS` (harness/run/program_run.py, program_explore._walk): a checker
that sleeps 1 s on every crash image would keep the run going for tens of seconds; with a budget
of 3 s the run ends a little after 3 s, the check in flight killed, exit 0 (no bug among the
states checked), and the results file says the budget cut the run and how many crash points it
left unchecked (complete + partial + unchecked = every crash point of the traced run), also
with --jobs 2 (the workers stop too)."""
from __future__ import annotations

import contextlib
import io
import json
import subprocess
import time
from pathlib import Path

import pytest

from cli_run import ROOT
from crashcheck.harness.cli.main import main

CC = ROOT / "instrument" / "bin" / "crashcheck-cc"
SOURCE = ROOT / "examples" / "pmlog" / "pmlog.c"
SLEEP_S = 1.0

pytestmark = pytest.mark.usefixtures("instrument_built")


def _run(tmp: Path, *args) -> tuple[int, str, dict, float]:
    """`crashcheck run --quiet --json ...` in this process: (exit, stdout, results, seconds)."""
    out, err = io.StringIO(), io.StringIO()
    t0 = time.monotonic()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["run", "--quiet", "--json", str(tmp / "out.json"), *map(str, args)])
    took = time.monotonic() - t0
    return code, out.getvalue() + err.getvalue(), json.loads((tmp / "out.json").read_text()), took


def test_a_budget_ends_a_slow_checkers_run_saying_what_it_left(tmp_path):
    prog = tmp_path / "pmlog"
    subprocess.run([CC, "-O1", SOURCE, "-lpmem", "-o", prog], check=True, capture_output=True)
    # the checker sleeps 1 s on every crash image (its first call, the crash-free image's check,
    # is quick: the budget is for crash images)
    slow = tmp_path / "slow-checker"
    slow.write_text(f"#!/bin/sh\nif [ -e {tmp_path}/started ]; then sleep {SLEEP_S}; else touch {tmp_path}/started; fi\n"
                    f"exec {prog} check \"$1\"\n")
    slow.chmod(0o755)
    argv = ["--", prog, "append", "pool", "3"]

    code, out, full, _ = _run(tmp_path, "--checker", f"{prog} check {{image}}", *argv)
    assert code == 0, out
    points, images = full["stats"]["crash_points"], full["stats"]["executions"]
    assert not full["stats"]["cut_by_budget"] and full["stats"]["points_left_by_budget"] == 0
    # without a budget the slow checker would take at least this long
    assert images * SLEEP_S >= 15

    for jobs in (1, 2):
        (tmp_path / "out.json").unlink()
        code, out, res, took = _run(tmp_path, "--budget", "3", "--jobs", jobs, "--checker", f"{slow} {{image}}", *argv)
        assert code == 0, out
        assert took < 3 + 2, (jobs, took, out)
        st = res["stats"]
        assert st["budget_s"] == 3 and st["cut_by_budget"], st
        assert st["points_left_by_budget"] > 0 and st["crash_points"] > 0, st
        assert st["crash_points"] + st["points_left_by_budget"] == points, st
        assert st["executions"] < images, st
        assert res["complete"] and res["bugs"] == []
        left = st["points_left_by_budget"]
        assert (f"the 3 s budget ran out: {st['points_complete']} of {points} crash points complete, "
                f"{st['points_sampled']} partial, {left} unchecked") in out, out
        # the check in flight was killed with its process group
        time.sleep(0.2)
        stray = subprocess.run(["pgrep", "-f", str(slow)], capture_output=True, text=True)
        assert stray.stdout == "", stray.stdout


def test_shrinking_the_budget_cuts_keeps_the_failing_state_it_got_to():
    """program_shrink.shrink: a judge raising OutOfTime (the hard deadline) ends it with the
    smallest failing state found so far, said to be cut (the record's `cut by the budget`)."""
    from types import SimpleNamespace
    from crashcheck.harness.check.program_check import Verdict
    from crashcheck.harness.check.program_shrink import shrink
    from crashcheck.harness.core.budget import OutOfTime

    cp = SimpleNamespace(units=[SimpleNamespace(choices=3, orders=None) for _ in range(3)])
    fail = Verdict(False, "checker-failure", "the checker exited with status 1")
    calls = []

    def judge(choice):
        calls.append(choice)
        if len(calls) > 1:
            raise OutOfTime()
        return fail                 # the units may persist whole (all at once, first): still failing

    assert shrink(cp, (0, 0, 0), fail, judge) == ((2, 2, 2), fail, False)
    calls.clear()

    def judge_first(choice):        # only the first unit may persist: the rest are needed lost
        calls.append(choice)
        if len(calls) > 2:
            raise OutOfTime()
        return fail if choice[1:] == (0, 0) else Verdict(True)

    # all three at once pass; the first half (unit 0) alone still fails; then the budget ends it
    assert shrink(cp, (0, 0, 0), fail, judge_first) == ((2, 0, 0), fail, True)
    assert shrink(cp, (0, 0, 0), fail, lambda c: fail)[2] is False

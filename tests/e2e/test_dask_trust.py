"""A Dask run ends, and says what happened: counts past 2^64 reach the client; a unit
that raises, or workers that fall silent, end the run in one line with exit 2 after what was found
is written; SIGINT (to the whole process group, as a terminal's Ctrl-C) and SIGTERM end it as they
end a local run: 130 / 143, "complete": false, the signal named, partial results kept.

Faults are injected by tests/dask_faults.py, a worker preload given to `--dask local:N` through
Dask's own setting ($DASK_DISTRIBUTED__WORKER__PRELOAD): nothing of it is in crashcheck.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_run import ROOT, run_cli
from waiting import history_checked, journal_has, wait_until

pytest.importorskip("distributed")

FAULTS = Path(__file__).resolve().parents[1] / "dask_faults.py"
# a small wort run with one unexpected bug (tests/e2e/test_dask.py RUN)
RUN = ("fuzz", "wort", "--bug", "no-flush-link", "--examples", "12", "--seed", "3", "--recovery-crashes",
       "1", "--max-ops", "5", "--limit", "8", "--quiet")


def _faulty(fault: str, **extra: str) -> dict[str, str]:
    return {"DASK_DISTRIBUTED__WORKER__PRELOAD": json.dumps([str(FAULTS)]),
            "CRASHCHECK_TEST_DASK_FAULT": fault, **extra}


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.mark.slow     # ~20 s; counts past 2^64 crossing exactly: unit/test_dask_wire.py
def test_woart_counts_past_2_64_reach_the_client(tmp_path):
    # The command: WOART's bulk-loaded histories have about 10^80 legal states. It hung
    # (the msgpack OverflowError dropped the unit's task-finished report); --jobs 1 finds the bug.
    out = tmp_path / "r.json"
    res = run_cli("fuzz", "woart", "--bug", "grow-no-free", "--examples", "16", "--seed", "5", "--quiet",
                  "--dask", "local:2", "--json", out, timeout=400)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    data = json.loads(out.read_text())
    assert data["complete"] is True and data["interrupted"] is None
    assert data["stats"]["histories"] >= 16
    assert int(data["stats"]["states_legal"]) > 2 ** 64
    assert any(not b["expected"] for b in data["bugs"])


@pytest.mark.slow     # ~20 s; counts past 10^300 crossing exactly: unit/test_dask_wire.py
def test_counts_past_10_300_from_every_unit(tmp_path):
    out = tmp_path / "r.json"
    res = run_cli(*RUN, "--dask", "local:2", "--json", out, timeout=240, env_extra=_faulty("huge"))
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    data = json.loads(out.read_text())
    assert data["complete"] is True
    # every one of the 8 units added 10^300 legal states and 2^64 explored ones
    assert int(data["stats"]["states_legal"]) > 8 * 10 ** 300
    assert data["stats"]["states_explored"] > 8 * 2 ** 64


def test_a_unit_that_raises_is_one_line_and_exit_2(tmp_path):
    out = tmp_path / "r.json"
    res = run_cli(*RUN, "--dask", "local:2", "--json", out, timeout=240, env_extra=_faulty("raise"))
    assert res.returncode == 2, res.stderr
    assert _lines(res.stderr) == [
        "crashcheck: internal error: unit 1 of wort --bug no-flush-link failed on its Dask worker: "
        "RuntimeError: injected fault in unit 1; the bugs found before it are in the results"], res.stderr
    data = json.loads(out.read_text())
    assert data["complete"] is False and data["per_structure"][0]["complete"] is False


@pytest.mark.slow     # ~17 s of cluster and silence; a Dask run's ending: the tests around it
def test_silent_workers_end_the_run(tmp_path):
    # No message of any unit arrives and none ends: the client says so after the silence it
    # allows ($CRASHCHECK_DASK_SILENCE_S), and ends; it never waits forever.
    out = tmp_path / "r.json"
    t0 = time.monotonic()
    res = run_cli(*RUN, "--dask", "local:2", "--json", out, timeout=240,
                  env_extra=_faulty("silent", CRASHCHECK_DASK_SILENCE_S="8"))
    assert res.returncode == 2, res.stderr
    lines = _lines(res.stderr)
    assert len(lines) == 1 and lines[0].startswith("crashcheck: internal error: no word from any Dask "
                                                   "worker for 8 s (8 of 8 units unfinished)"), lines
    data = json.loads(out.read_text())
    assert data["complete"] is False and data["stats"]["histories"] == 0
    assert time.monotonic() - t0 < 180


@pytest.mark.parametrize("sig, group", [
    pytest.param(signal.SIGINT, True, id="SIGINT-to-the-group"),
    # (slow: the signal path is SIGINT's; SIGTERM itself: e2e/test_run_trust.py, local runs)
    pytest.param(signal.SIGTERM, False, id="SIGTERM-to-the-client", marks=pytest.mark.slow)])
def test_a_signal_ends_a_dask_run_as_a_local_one(sig, group, tmp_path):
    # A run long enough to be stopped in the middle; the signal comes once a unit has checked a
    # history (each checker works in a folder crashcheck-<pid>-* in $CRASHCHECK_WORKDIR).
    work, out = tmp_path / "work", tmp_path / "r.json"
    work.mkdir()
    env = dict(os.environ, CRASHCHECK_WORKDIR=str(work))
    proc = subprocess.Popen([sys.executable, "-m", "crashcheck.harness.cli.main", "fuzz", "wort", "--examples", "2000",
                             "--seed", "3", "--dask", "local:2", "--quiet", "--json", str(out)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        wait_until(history_checked(work, "wort"), "a unit checked a history", proc=proc)
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 128 + sig, stderr
    assert _lines(stderr) == [f"crashcheck: interrupted ({sig.name}); partial results written"], stderr
    data = json.loads(out.read_text())
    assert data["complete"] is False and data["interrupted"] == sig.name
    assert data["stats"]["histories"] > 0            # what the units had found came back


@pytest.mark.slow     # a Dask run interrupted: the SIGINT case above
def test_sigterm_while_no_unit_answers_is_still_an_interruption(tmp_path):
    # The run: units silent, SIGTERM; it wrote "complete": true, no interruption,
    # 0 histories, exit 0. Now the units not back in time are cancelled and the run says it was
    # interrupted (exit 143), with nothing claimed.
    # (Units that never end are given up GIVE_UP_S after the signal: 2 s here, not 20.)
    out, marks = tmp_path / "r.json", tmp_path / "marks"
    marks.mkdir()
    env = dict(os.environ, **_faulty("silent", CRASHCHECK_TEST_DASK_MARKS=str(marks), CRASHCHECK_GIVE_UP_S="2"))
    proc = subprocess.Popen([sys.executable, "-m", "crashcheck.harness.cli.main", *RUN, "--dask", "local:2", "--json", str(out)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        wait_until(lambda: len(list(marks.iterdir())) >= 2, "both workers run a silent unit", proc=proc)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 143, stderr
    data = json.loads(out.read_text())
    assert data["complete"] is False and data["interrupted"] == "SIGTERM"
    assert data["stats"]["histories"] == 0


@pytest.mark.slow     # ~15 s; the journal: e2e/test_run_trust.py; Dask's topic: unit/test_dask_wire.py
def test_bugs_reach_the_journal_as_units_find_them(tmp_path):
    # A client killed outright (SIGKILL) leaves its journal; under --dask it held nothing the
    # units had found, since only results at a unit's end came back. Units now send each bug the
    # moment they find it, and the client journals it.
    from crashcheck.harness.run.journal import read_journal
    out = tmp_path / "r.json"
    journal = tmp_path / "r.json.journal"
    proc = subprocess.Popen([sys.executable, "-m", "crashcheck.harness.cli.main", "fuzz", "wort", "--bug", "no-flush-link",
                             "--examples", "2000", "--seed", "3", "--dask", "local:2", "--quiet", "--json",
                             str(out)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        wait_until(journal_has(journal, '"expected": false'), "a bug in the journal", proc=proc)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    found = read_journal(journal)
    assert any(not b["expected"] for b in found["bugs"]), found["bugs"]

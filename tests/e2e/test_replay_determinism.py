"""`crashcheck replay` says "fixed" (exit 0) only for the very run the record was made from
(issue 49 point 6): a record carries its trace's fingerprint (`trace_digest`, harness/check/
trace_digest.py), and a replay whose run parts from it on the same binary is nondeterministic,
exit 3, with where the runs parted; a record made before the fingerprint still replays and says
its determinism was not verified. Fuzz records (WORT's seeded no-flush-link) and program-mode
records (tests/fixtures/nondet, whose path changes from run to run) alike."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from cli_run import ROOT
from crashcheck.harness.check.pipeline import Checker
from crashcheck.harness.cli.cmd_replay import _ops
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.target import structures

from test_program_mode import _main

pytestmark = pytest.mark.usefixtures("instrument_built")


@pytest.fixture(scope="module")
def wort_record(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("wort")
    res = _main("fuzz", "wort", "--bug", "no-flush-link", "--examples", "5", "--seed", "1", "--quiet", "--no-fix",
                "--json", out / "w.json")
    assert res.returncode == 1, res.stdout + res.stderr
    bugs = json.loads((out / "w.json").read_text())["bugs"]
    return next(b for b in bugs if b["class"] == "lost-durable-write")


def _all_kept(rec: dict) -> list[int]:
    """The crash state of REC's crash point that keeps every pending store (it passes)."""
    s = structures.get(rec["structure"])
    ops = _ops("rec", rec["history"], "history", s, s.model())
    with Checker(s, rec["bug"], Settings(model=rec["model"], seed=rec["seed"])) as checker:
        trace, _ = checker.trace(ops)
        return [u.choices - 1 for u in checker.point_at(trace, rec["crash"]["index"]).units]


def _replay(tmp: Path, rec: dict):
    path = tmp / "rec.json"
    path.write_text(json.dumps(rec))
    return _main("replay", path)


def test_fuzz_record_replays_fixed_only_on_the_recorded_run(wort_record, tmp_path):
    rec = dict(wort_record)
    digest = rec["trace_digest"]
    assert digest["events"] == rec["crash"]["event"] and digest["binary"] and len(digest["path"]) == len(digest["stored"])
    assert _replay(tmp_path, rec).returncode == 1
    # the state that keeps every store passes: on the recorded run, that is "fixed" (0)
    passing = {**rec, "crash": {**rec["crash"], "choice": _all_kept(rec)}}
    res = _replay(tmp_path, passing)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "not reproduced: recovery now leaves an acceptable state" in res.stdout
    assert "not verified" not in res.stdout
    # the same driver parting from the record at event 2: nondeterministic, never "fixed"
    parted = {**passing, "trace_digest": {**digest, "path": digest["path"][:2] + ["00000000"] + digest["path"][3:]}}
    res = _replay(tmp_path, parted)
    assert res.returncode == 3, res.stdout + res.stderr
    assert "not reproducible: nondeterministic: the replayed run took another path than the recorded one at " \
           "event #2 (there the replay logged a store" in res.stdout
    assert "not reproduced" not in res.stdout
    # a rebuilt driver (another binary) may run other code: no verdict of nondeterminism
    rebuilt = {**parted, "trace_digest": {**parted["trace_digest"], "binary": "0" * 32}}
    res = _replay(tmp_path, rebuilt)
    assert res.returncode == 0 and "the code changed since the record was made" in res.stdout
    # a record made before the fingerprint: the old behaviour, and a note
    res = _replay(tmp_path, {k: v for k, v in passing.items() if k != "trace_digest"})
    assert res.returncode == 0 and "not verified: the record has no trace_digest" in res.stdout


def test_program_record_of_a_nondeterministic_program(tmp_path):
    exe = tmp_path / "nondet"
    subprocess.run([ROOT / "instrument" / "bin" / "crashcheck-cc", "-O1", ROOT / "tests" / "fixtures" / "nondet" / "nondet.c",
                    "-lpmem", "-o", exe], check=True, capture_output=True)
    res = _main("run", "--quiet", "--json", tmp_path / "out.json", "--checker", f"{exe} check {{image}}",
                "--", exe, "pool", tmp_path / "counter")
    assert res.returncode == 1, res.stdout + res.stderr
    [bug] = json.loads((tmp_path / "out.json").read_text())["bugs"]
    assert bug["trace_digest"]["events"] == bug["crash"]["event"]
    rep = _main("replay", tmp_path / "out.bugs" / f"{bug['id']}.json")
    assert rep.returncode == 3, rep.stdout + rep.stderr
    assert "not reproducible: nondeterministic: the replayed run took another path" in rep.stdout
    # two more runs of the replay differ as well, both sides named
    assert "two replays differ too: event #" in rep.stdout and "in the first run and" in rep.stdout

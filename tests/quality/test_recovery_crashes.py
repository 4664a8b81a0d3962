"""Crashes inside recovery: a structure whose recovery is not idempotent (it clears its undo log
before restoring the value) recovers correctly from every ordinary crash, and only crashing inside
its recovery, then recovering again, exposes the torn value. Uses a user structure built with
`crashcheck build` (tests/fixtures/undomap, all in its adapter file)."""
import json
from pathlib import Path

import pytest
from cli_run import run_cli

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "undomap"


@pytest.fixture(scope="module")
def undomap(instrument_built):
    res = run_cli("build", "undomap", "--adapter", FIXTURE / "undomap.c")
    assert res.returncode == 0, res.stderr
    return "undomap"


def fuzz(structure, bug, recovery_crashes):
    from crashcheck.harness.run.config import Config
    from crashcheck.harness.run.plan import fuzz_target
    from crashcheck.harness.check.pipeline import Settings
    return fuzz_target(structure, bug, Settings(seed=1, recovery_crashes=recovery_crashes),
                       Config(examples=24, budget=None, stop_on_class="torn-update"))


def test_correct_recovery_survives_crashes_inside_it(undomap):
    r = fuzz(undomap, None, 4)
    assert [b for b in r.records if not b["expected"]] == []
    assert r.stats.states_explored > 0


def test_non_idempotent_recovery_found_only_by_crashing_recovery(undomap, tmp_path):
    without = fuzz(undomap, "clear-first", 0)
    assert [b["class"] for b in without.records if not b["expected"]] == []
    found = fuzz(undomap, "clear-first", 4)
    torn = [b for b in found.records if b["class"] == "torn-update" and not b["expected"]]
    assert torn, [b["class"] for b in found.records]
    rec = torn[0]
    assert rec["recovery_of"] is not None and rec["detail"].startswith("crash during recovery")
    # Shrinking such a finding is weak: only a few post-crash images per history get their
    # recovery crashed, so a shorter history often picks other images. Checked part: max-ops.
    assert len(rec["history"]) - rec["load"] <= 10 and any(h.startswith("update") for h in rec["history"])
    # the lost store is recovery's own restore of the value
    assert rec["lost"] and rec["lost"][0]["site"]["func"] == "um_recover"
    path = tmp_path / "bug.json"
    path.write_text(json.dumps(rec))
    rep = run_cli("replay", path)
    assert rep.returncode == 1 and "reproduced: torn-update" in rep.stdout, rep.stdout + rep.stderr

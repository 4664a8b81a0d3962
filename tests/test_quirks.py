"""Quirks that only show after recovery or across runs are findings of their own class.

Uses a user structure built with `crashcheck build` (tests/fixtures/quirk_tree): a small crash-
consistent table whose seeded "bugs" are a recovery that leaves a right state but a broken
volatile cursor (the next insert dies) and an insert that stamps slots with the clock. Each is
fuzzed end to end through the CLI with a fixed seed and a few histories; the structure itself
passes.
"""
import json
from pathlib import Path

import pytest
from cli_run import run_cli

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "quirk_tree"


@pytest.fixture(scope="module")
def quirk(instrument_built):
    res = run_cli("build", "quirk", "--adapter", FIXTURE / "quirk.c")
    assert res.returncode == 0, res.stderr
    return "quirk"


def fuzz(tmp_path: Path, structure: str, *args: str) -> tuple[int, list[dict], str]:
    out = tmp_path / "out.json"
    res = run_cli("fuzz", structure, "--examples", "4", "--max-ops", "5", "--limit", "2", "--seed", "1",
                  "--json", out, "--quiet", *args, timeout=300)
    assert "Traceback" not in res.stderr, res.stderr
    bugs = [b for b in json.loads(out.read_text())["bugs"] if not b["expected"]]
    return res.returncode, bugs, res.stdout


def test_the_structure_itself_passes(quirk, tmp_path):
    code, bugs, out = fuzz(tmp_path, quirk)
    assert code == 0 and bugs == [], out


def test_followup_operation_that_dies_after_recovery(quirk, tmp_path):
    # Recovery after a crash inside an insert leaves the right state but no cursor: the first
    # follow-up insert dies. A post-recovery finding naming that operation, with the outputs of
    # the follow-up operations before it kept (before: an operation-crash, outputs dropped).
    code, bugs, out = fuzz(tmp_path, quirk, "--bug", "recover-no-cursor", "--recovery-crashes", "0")
    assert code == 1, out
    assert [(b["class"], b["group"]) for b in bugs] == [
        ("post-recovery-divergence", "follow-up: insert: SIGSEGV (signal 11)")], bugs
    [bug] = bugs
    n = len(bug["followup_outputs"])
    assert bug["followup"][n].startswith("insert ")
    assert f"follow-up operation {n} `{bug['followup'][n]}` died of SIGSEGV" in bug["detail"]
    assert all(out in bug["detail"] for out in bug["followup_outputs"][-4:])
    assert bug["actual"] is not None and bug["crash"]["index"] is not None
    replay = run_cli("replay", tmp_path / "out.bugs" / f"{bug['id']}.json")
    assert replay.returncode == 1 and "reproduced: post-recovery-divergence" in replay.stdout, replay.stdout

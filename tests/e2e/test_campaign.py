"""`crashcheck campaign FILE.toml`: the runs of a file into one results file and one
report, each run checked as fuzz checks its options, and a bad file one error line."""
from __future__ import annotations

import json

import pytest
from cli_run import run_cli

from crashcheck.harness.cli.main import main


def _in_process(capsys, *args) -> tuple[int, list[str]]:
    """The CLI run here (no start-up of a new Python: these end before any work), its exit
    status and its non-empty stderr lines."""
    code = main([str(a) for a in args])
    return code, [line for line in capsys.readouterr().err.splitlines() if line.strip()]

TWO_RUNS = """
examples = 4
seed = 3
max_ops = 4
limit = 4
recovery_crashes = 0

[[run]]
structure = "wort"
bug = "no-flush-link"

[[run]]
structure = "wort"
bug = "no-flush-link"
model = "eadr"
"""


def test_a_campaign_is_one_results_file_and_one_report(tmp_path):
    camp = tmp_path / "c.toml"
    camp.write_text(TWO_RUNS)
    out, report = tmp_path / "r.json", tmp_path / "r.html"
    res = run_cli("campaign", camp, "--json", out, "--report", report, "--quiet")
    assert res.returncode in (0, 1) and "Traceback" not in res.stderr, res.stderr
    data = json.loads(out.read_text())
    assert data["complete"] and data["campaign"] == str(camp)
    assert [(r["structure"], r["bug"], r["run"], r["model"]) for r in data["per_structure"]] == [
        ("wort", "no-flush-link", 1, "adr"), ("wort", "no-flush-link", 2, "eadr")]
    assert all(r["stats"]["histories"] >= 4 for r in data["per_structure"])
    ids = [b["id"] for b in data["bugs"]]
    assert len(ids) == len(set(ids))          # one structure under two models: no record overwritten
    for b in data["bugs"]:
        assert (out.with_suffix(".bugs") / f"{b['id']}.json").is_file()
        assert f"{b['id']}.json" in b["replay"]
    assert report.is_file()


@pytest.mark.parametrize("text, needle", [
    ("[[run]\nstructure = 1", "is not TOML"),
    ("seed = 1", "has no runs"),
    ("[[run]]\nstructure = \"wort\"\ncolour = \"red\"", "run 1: unknown key 'colour'"),
    ("[[run]]\nbug = \"x\"", "run 1: no structure"),
    ("[[run]]\nstructure = \"nosuch\"", "run 1 (nosuch):"),
    ("[[run]]\nstructure = \"wort\"\nexamples = 2\n[[run]]\nstructure = \"wort\"\nmodel = \"x86\"",
     "run 2 (wort): argument --model: invalid choice"),
    ("[[run]]\nstructure = \"wort\"\nexamples = 0", "run 1 (wort): --examples must be positive"),
])
def test_a_bad_campaign_file_is_one_line(tmp_path, capsys, text, needle):
    camp = tmp_path / "c.toml"
    camp.write_text(text)
    code, lines = _in_process(capsys, "campaign", camp, "--quiet", "--bugdir", tmp_path / "b")
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("crashcheck: error: ") and needle in lines[0], lines


def test_a_missing_campaign_file_is_one_line(tmp_path, capsys):
    code, lines = _in_process(capsys, "campaign", tmp_path / "none.toml")
    assert code == 2 and len(lines) == 1 and "cannot read the campaign file" in lines[0], lines

"""A structure that is not a map, with a model of the user's own, checked end to end.

tests/fixtures/regbank is a PM register bank (set / get / move, move made failure-atomic by a
redo log) whose model, `register_bank`, lives in a Python file given to `crashcheck build
--model`. Nothing in harness/ knows it: fuzzing, judging, records, replay and the report go
through the structure's model. Its two seeded bugs must be found with the right class, and the
correct build must pass."""
import json
import shutil
from pathlib import Path

import pytest
from cli_run import run_cli

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "regbank"


@pytest.fixture(scope="module")
def regbank(instrument_built):
    res = run_cli("build", "regbank", "--adapter", FIXTURE / "regbank.c", "--model", FIXTURE / "regbank_model.py")
    assert res.returncode == 0, res.stderr
    assert "(register_bank model)" in res.stdout
    return "regbank"


def _fuzz(tmp_path, *args):
    out = tmp_path / "r.json"
    res = run_cli("fuzz", "regbank", "--seed", "1", "--quiet", "--json", out, "--report", tmp_path / "r.html", *args)
    return res, (json.loads(out.read_text()) if out.exists() else None)


def test_correct_build_passes_with_full_coverage(regbank, tmp_path):
    res, data = _fuzz(tmp_path, "--examples", "12")
    assert res.returncode == 0, res.stdout + res.stderr
    assert data["bugs"] == [] and data["stats"]["histories"] >= 12
    assert data["stats"]["crash_points"] > 0 and data["stats"]["points_sampled"] == 0
    listed = json.loads(run_cli("list", "--json").stdout)
    entries = listed if isinstance(listed, list) else listed["structures"]
    assert next(e for e in entries if e["name"] == "regbank")["model"] == "register_bank"


@pytest.mark.parametrize("bug, history_has", [("set-no-flush", "set "), ("move-no-log", "move ")])
def test_seeded_bugs_found_in_the_models_terms(regbank, tmp_path, bug, history_has):
    res, data = _fuzz(tmp_path, "--bug", bug, "--examples", "30", "--recovery-crashes", "0")
    assert res.returncode == 1, res.stdout + res.stderr
    [rec] = [b for b in data["bugs"] if not b["expected"]]
    assert rec["class"] == "wrong-value" and rec["spec_model"] == "register_bank"
    assert any(h.startswith(history_has) for h in rec["history"]), rec["history"]
    # states in the model's own JSON form: [[register, value], ...] for all eight registers
    assert len(rec["actual"]) == 8 and all(len(st) == 8 for st in rec["expected_states"])
    assert rec["actual"] not in rec["expected_states"]
    assert rec["followup"][:1] == ["get 0"] and rec["coverage"]["exhaustive"]
    assert "recovered state [" in rec["detail"]
    rep = run_cli("replay", Path(rec["replay"].split()[-1]))
    assert rep.returncode == 1 and "reproduced: wrong-value" in rep.stdout, rep.stdout + rep.stderr
    # a record naming a register the structure does not have: one line, exit 2
    bad = dict(rec, history=rec["history"][:-1] + ["get 9"])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    rep = run_cli("replay", path)
    assert rep.returncode == 2 and "registers 0..7" in rep.stderr and rep.stderr.count("\n") == 1


def test_a_model_crashcheck_does_not_know_is_one_line(instrument_built, tmp_path):
    """Nor is such a structure registered: no meta.json, so no command lists it."""
    from crashcheck.harness.target import structures
    for name in ("regbank-nomodel", "regbank-wrong"):
        shutil.rmtree(structures.BUILD / "user" / name, ignore_errors=True)
    res = run_cli("build", "regbank-nomodel", "--adapter", FIXTURE / "regbank.c")
    assert res.returncode == 2 and "register_bank" in res.stderr and "--model FILE.py" in res.stderr, res.stderr
    wrong = tmp_path / "m.py"
    wrong.write_text("from crashcheck.specs.model import Model\nMODEL = Model('other', lambda: 0, lambda s, o: [(0, s)], str, str)\n")
    res = run_cli("build", "regbank-wrong", "--adapter", FIXTURE / "regbank.c", "--model", wrong)
    assert res.returncode == 2 and "defines the model 'other'" in res.stderr, res.stderr
    assert not {"regbank-nomodel", "regbank-wrong"} & set(structures.user_names())
    for name in ("regbank-nomodel", "regbank-wrong"):
        shutil.rmtree(structures.BUILD / "user" / name, ignore_errors=True)

"""Torn stores found as bugs of their own class (harness/check/torn_store.py): a crash state that
keeps part of a store wider than the failure-atomic unit fails, and passes with that store whole
or not at all. Seeded in examples/pairkv (a slot table of our own, built with `crashcheck build`:
one-store, an insert that writes {key, value} with one 16-byte store) and in HART and Heart
(update-in-place, a same-length value copied over the old one; the gate, tests/quality/test_gate.py,
runs them too, as slow), each found with its class at default settings (Heart: its catalog's eADR);
correct pairkv has no finding."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import run_cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "pairkv"
CLASS = "torn-store"


@pytest.fixture(scope="module")
def pairkv(instrument_built):
    res = run_cli("build", "pairkv", EXAMPLE / "pairkv.c", "--adapter", EXAMPLE / "adapter.c", timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    return "pairkv"


def fuzz(tmp_path, *args):
    out = tmp_path / "r.json"
    res = run_cli("fuzz", *args, "--quiet", "--json", out, "--bugdir", tmp_path / "r.bugs", timeout=900)
    return res, json.loads(out.read_text())


@pytest.mark.slow
def test_pairkv_one_store_is_a_torn_store(pairkv, tmp_path):
    res, data = fuzz(tmp_path, pairkv, "--bug", "one-store", "--budget", "60", "--seed", "1", "--stop-on", CLASS)
    assert res.returncode == 1, res.stdout + res.stderr
    assert [b["class"] for b in data["bugs"]] == [CLASS], data["bugs"]
    [rec] = data["bugs"]
    # the store's site, how much of it persisted, recovery's read of it (pairkv's driver logs
    # loads: its adapter sets .threads), then what the recovered state showed
    assert "pairkv.c:" in rec["group"] if isinstance(rec["group"], str) else "pairkv.c:" in rec["group"][1]
    assert "16-byte store at examples/pairkv/pairkv.c:" in rec["detail"], rec["detail"]
    assert "persisted in part (1 of 2 pieces)" in rec["detail"], rec["detail"]
    assert "read by recovery at examples/pairkv/pairkv.c:" in rec["detail"], rec["detail"]
    replay = run_cli("replay", tmp_path / "r.bugs" / f"{rec['id']}.json", timeout=300)
    assert replay.returncode == 1 and f"reproduced: {CLASS}" in replay.stdout, replay.stdout + replay.stderr


@pytest.mark.slow
def test_correct_pairkv_has_no_finding(pairkv, tmp_path):
    res, data = fuzz(tmp_path, pairkv, "--examples", "40", "--seed", "1")
    assert res.returncode == 0 and data["bugs"] == [], res.stdout


@pytest.mark.slow
@pytest.mark.parametrize("tree", ["hart", "heart"])
def test_update_in_place_names_the_copy(trees_built, tmp_path, tree):
    res, data = fuzz(tmp_path, tree, "--bug", "update-in-place", "--budget", "60", "--seed", "1",
                     "--stop-on", CLASS)
    assert res.returncode == 1, res.stdout + res.stderr
    rec = next(b for b in data["bugs"] if b["class"] == CLASS)
    assert f"16-byte store at trees/{tree}/{tree}.c:" in rec["detail"], rec["detail"]
    assert "persisted in part (1 of 2 pieces)" in rec["detail"], rec["detail"]
    assert any(op.startswith("update") for op in rec["history"]), rec["history"]

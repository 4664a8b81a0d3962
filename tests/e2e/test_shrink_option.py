"""`crashcheck fuzz --shrink N` bounds the histories Hypothesis tries while shrinking a batch's
failures: fewer tries end a run that stops on a class sooner, finding the same class; a negative
count is a usage error. (The gate's `shrink=` option is checked with the marker's other options,
tests/e2e/test_gate_options.py.)"""
from __future__ import annotations

import json
import subprocess

import pytest
from cli_run import ROOT, run_cli


@pytest.fixture(scope="module")
def built():
    res = subprocess.run(["make", "-s", "trees"], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def _fuzz(tmp_path, shrink: int) -> dict:
    out = tmp_path / f"s{shrink}.json"
    res = run_cli("fuzz", "wort", "--bug", "update-no-fence", "--examples", "48", "--seed", "1",
                  "--stop-on", "wrong-value", "--shrink", shrink, "--quiet", "--json", out)
    assert res.returncode == 1, res.stdout + res.stderr
    return json.loads(out.read_text())


def test_fewer_shrink_tries_check_fewer_histories_and_find_the_same_class(built, tmp_path):
    none, some = _fuzz(tmp_path, 0), _fuzz(tmp_path, 3)
    for res in (none, some):
        assert [b["class"] for b in res["bugs"] if not b.get("expected")] == ["wrong-value"]
    # found at the same history of the same batch; then 0 tries stop at once, 3 try 3 more
    assert some["stats"]["histories"] == none["stats"]["histories"] + 3


def test_a_negative_shrink_is_a_usage_error():
    res = run_cli("fuzz", "wort", "--shrink", "-1", "--examples", "1")
    assert res.returncode == 2
    assert res.stderr.strip() == "crashcheck: error: --shrink must be 0 or more histories, not -1"

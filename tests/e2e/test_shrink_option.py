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



@pytest.mark.slow      # three runs to the end of their shrinking: ~25 s of CPU
def test_records_say_how_far_they_were_shrunk(built, tmp_path):
    """Every record says whether its history and its crash state were shrunk: with no tries left
    the history is `not tried`, with 3 it is cut, with plenty it is done; the crash state is
    shrunk each time (docs/bug-record.md `shrink`), and the summary says both."""
    def shrink(n):
        out = tmp_path / f"t{n}.json"
        res = run_cli("fuzz", "wort", "--bug", "update-no-fence", "--examples", "48", "--seed", "1",
                      "--stop-on", "wrong-value", "--shrink", n, "--quiet", "--json", out)
        [bug] = [b for b in json.loads(out.read_text())["bugs"] if not b.get("expected")]
        line = f"      shrunk:  history {bug['shrink']['history']}, crash state {bug['shrink']['crash_state']}"
        assert line in res.stdout.splitlines(), res.stdout
        return bug["shrink"]
    assert shrink(0) == {"history": "not tried", "crash_state": "done"}
    assert shrink(3) == {"history": "cut by the budget", "crash_state": "done"}
    assert shrink(400) == {"history": "done", "crash_state": "done"}

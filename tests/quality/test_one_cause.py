"""One cause, one bug, end to end: Heart's seeded split-prefix-length (a leaf split packs the new
parent's prefix length one too long) with the continuation after recovery. The continuation's
inserts next to a crashed key split a leaf after a crash that lost nothing, breaking a rule no
run without crash of the same fuzz run broke; the same operations fail without any crash, on the
same new stores as the runs without crash (harness/check/without_crash.py), so it is one bug
with theirs, its classes listed (harness/triage/bugs.py)."""
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def built(instrument_built):
    res = subprocess.run(["make", "-s", "trees"], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return True


def test_split_prefix_length_with_the_continuation_is_one_bug(built, crashcheck):
    # (the continuation is the default: 6 neighbours)
    result = crashcheck.run("heart", bug="split-prefix-length", seed=1, examples=48, stop_on_class="wrong-value")
    got = [(b["class"], b["detail"][:90]) for b in result.unexpected]
    assert len(got) == 1, f"expected one bug, got {got} (report: {result.report})"
    [bug] = result.unexpected
    assert bug["classes"][0] == bug["class"] and "wrong-value" in bug["classes"], bug["classes"]
    assert bug["crash"]["index"] is None          # shown by a run that needs no crash

"""Issue 33's pattern 4, a capacity crossed without being declared, seeded in a B+tree of our own
(examples/smallbt): the probe run observes its root split at 60 keys (no expect.json declares it),
histories cross it inside checked operations, and the seeded bug there is found at default settings
as one bug of its catalog class; the correct smallbt gains no finding. Plain histories hold at most
48 distinct keys, so without the probe the root split is never crash-checked (bench/README.md shows the run
before the probe: 0 bugs in 60 s)."""
import json
from pathlib import Path

import pytest
from userbuild import build_once

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "smallbt"
[BUG] = json.loads((EXAMPLE / "bugs.json").read_text())
# a build and two runs of a structure whose leaves are 1 KB each: minutes of CPU
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(instrument_built):
    build_once("smallbt", EXAMPLE / "smallbt.c", "--adapter", EXAMPLE / "adapter.c")
    return True


def test_root_split_bug_found_with_its_class_at_defaults(built, crashcheck):
    result = crashcheck.run("smallbt", bug=BUG["name"], seed=1, budget=120, stop_on_class=BUG["class"])
    got = [b["class"] for b in result.unexpected]
    assert got == [BUG["class"]], f"smallbt --bug {BUG['name']}: expected one {BUG['class']} bug, got {got or 'none'}"
    [row] = result.results["per_structure"]
    crossed = {label: n for label, n in row["stats"]["capacity"].items() if label.startswith("insert at 60 keys")}
    assert crossed and all(crossed.values()), row["stats"]["capacity"]


def test_correct_smallbt_gains_no_finding(built, crashcheck):
    result = crashcheck.check("smallbt", seed=1, examples=16)
    [row] = result.results["per_structure"]
    assert any(label.startswith("insert at 60 keys") for label in row["stats"]["capacity"])

"""Issue 33's patterns 1-3, seeded in a map of our own (examples/leafdir): the continuation after
recovery, at default settings (6 neighbours), finds each as one bug of its catalog class, its record
naming the recovered state the answers were judged from; the correct leafdir gains no finding.

Each pattern passes today's check of a recovered state (the dump is acceptable, the structure's
rules hold, every dumped key is found): only the lookup of the key in flight against the dump,
an insert next to it, or its delete after recovery shows it.
"""
from pathlib import Path

import pytest
from treeutil import seeded_bugs
from userbuild import build_once

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "leafdir"
BUGS = [pytest.param(b["name"], b["class"], id=b["name"]) for b in seeded_bugs(EXAMPLE / "bugs.json")]
# a build and four runs: about a minute of CPU, more than the default suite's share
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(instrument_built):
    build_once("leafdir", EXAMPLE / "leafdir.c", "--adapter", EXAMPLE / "adapter.c")
    return True


@pytest.mark.parametrize("bug, cls", BUGS)
def test_pattern_found_with_its_class(built, crashcheck, bug, cls):
    result = crashcheck.run("leafdir", bug=bug, seed=1, examples=16, stop_on_class=cls)
    got = [b["class"] for b in result.unexpected]
    assert got == [cls], f"leafdir --bug {bug}: expected one {cls} bug, got {got or 'none'} ({result.report})"
    [record] = result.unexpected
    assert record["recovered_state"].startswith("the state "), record["recovered_state"]
    assert record["detail"].startswith("after recovery to " + record["recovered_state"])


def test_correct_leafdir_gains_no_finding(built, crashcheck):
    result = crashcheck.check("leafdir", seed=1, examples=16)
    assert result.results["stats"]["states_explored"] > 0
